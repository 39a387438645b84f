package reducer_test

import (
	"errors"
	"testing"

	"github.com/baton-run/baton/pkg/reducer"
)

// TestAnswersAreDecidedByTheReducer: whether an approval or an execution
// waits for an answer, and whether a decision or verdict is one, is decided
// here and told apart by a typed error (ErrNotPending, ErrBadAnswer) that
// the session store and the HTTP APIs read instead of checking again.
func TestAnswersAreDecidedByTheReducer(t *testing.T) {
	for _, c := range []struct {
		name string
		step step
		kind error
	}{
		{"unknown approval", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.answered("a9", "call-9", reducer.Approve))
		}, reducer.ErrNotPending},
		{"approval answered while running", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.answered("a1", "call-1", reducer.Approve))
		}, reducer.ErrNotPending},
		{"approval answered with no turn", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.answered("a1", "call-1", reducer.Deny))
		}, reducer.ErrNotPending},
		{"approval answered for another turn", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.answered("a1", "call-1", reducer.Approve, turnID("t2")))
		}, reducer.ErrNotPending},
		{"unknown decision", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.answered("a1", "call-1", "maybe"))
		}, reducer.ErrBadAnswer},
		{"unknown decision with nothing pending", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.answered("a1", "call-1", "maybe"))
		}, reducer.ErrBadAnswer},
		{"verdict on no uncertain execution", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.suspendedFor(reducer.CauseBudget), facts(b.verdict("x1", reducer.Rerun))
		}, reducer.ErrNotPending},
		{"verdict on the wrong execution", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingVerdict(), facts(b.verdict("x2", reducer.Abandon))
		}, reducer.ErrNotPending},
		{"unknown verdict", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingVerdict(), facts(b.verdict("x1", "retry"))
		}, reducer.ErrBadAnswer},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _, apply, _ := run(t, c.step)
			_, err := before.Apply(apply...)
			if !errors.Is(err, c.kind) || !errors.Is(err, reducer.ErrIllegal) {
				t.Fatalf("Apply: %v; want an illegal transition matching %v", err, c.kind)
			}
			for _, other := range []error{reducer.ErrNotPending, reducer.ErrBadAnswer} {
				if other != c.kind && errors.Is(err, other) {
					t.Fatalf("Apply: %v also matches %v", err, other)
				}
			}
		})
	}
}

// TestHolds: a running turn is held by its invocation until a fact takes
// it away (a suspension, a takeover after it, a cancel).
func TestHolds(t *testing.T) {
	b := newBuilder()
	mine := mustReduce(t, b.running())
	if !mine.Holds(mine.Turn) {
		t.Fatal("a running turn is not held by its own invocation")
	}
	if mine.Holds(nil) || (reducer.State{}).Holds(mine.Turn) {
		t.Fatal("Holds with no turn")
	}
	b1 := newBuilder()
	suspended := mustReduce(t, append(b1.running(), b1.suspended(reducer.CauseBudget)))
	if suspended.Holds(mine.Turn) {
		t.Fatal("a suspended turn is still held")
	}
	b2 := newBuilder()
	takenOver := mustReduce(t, append(b2.running(), b2.suspended(reducer.CauseBudget), b2.resumed()))
	if takenOver.Holds(mine.Turn) {
		t.Fatalf("a turn resumed by another invocation (%d) is still held by invocation %d", takenOver.Turn.Invocations, mine.Turn.Invocations)
	}
	other := *mine.Turn
	other.ID = "t9"
	if mine.Holds(&other) {
		t.Fatal("another turn is held")
	}
}
