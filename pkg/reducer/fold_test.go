package reducer_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// session is a realistic log touching every fact type and every cause.
func session() []reducer.Fact {
	b := newBuilder()
	log := facts(
		b.created(),
		b.message("m1"),
		b.message("m2"),
		b.started("t1"),
		b.execStarted("x1", "call-1"),
		b.requested("a1", "call-2"),
		b.requested("a2", "call-3", expires(t0.Add(30*time.Minute))),
		b.suspended(reducer.CauseApproval),
		b.message("m3"),
		b.answered("a2", "call-3", reducer.Deny, reason("too risky")),
		b.answered("a1", "call-2", reducer.Approve),
		b.resumed(),
		b.execStarted("x2", "call-4"),
		b.uncertain("x2", "call-4"),
		b.verdict("x2", reducer.Rerun),
		b.resumed(),
		b.completed(usage(1000, 200, 6), snapshot("snap/t1")),
		b.message("m4"),
		b.started("t2"),
		b.suspended(reducer.CauseBudget),
		b.resumed(),
	)
	b.skip(leaseFor) // the invocation died; the reaper takes over
	log = append(log,
		b.suspended(reducer.CauseLease, by(system)),
		b.resumed(),
		b.suspended(reducer.CauseThrottled),
		b.resumed(),
		b.failed(failure(reducer.FailModel), usage(300, 0, 2), snapshot("snap/t2")),
		b.message("m5"),
		b.started("t3"),
		b.requested("a3", "call-5"),
		b.suspended(reducer.CauseApproval),
		b.cancelled(usage(10, 5, 1)),
		b.message("m6"),
	)
	return log
}

func TestSessionEndState(t *testing.T) {
	log := session()
	s, err := reducer.Reduce(log)
	if err != nil {
		t.Fatal(err)
	}
	last := log[len(log)-1]
	want := reducer.State{
		Agent: "helper", Owner: "owner-1", Created: log[0].Time, Updated: last.Time,
		Status: reducer.Idle, LastSeq: last.Seq,
		Inbox: []reducer.Message{{ID: "m6", Text: "text of m6"}},
		Usage: reducer.Usage{InputTokens: 1310, OutputTokens: 205, Steps: 9},
		Turns: 3, Last: reducer.TurnCancelled,
		// The failure of t2 is forgotten once t3 ends otherwise.
		Snapshot: "snap/t2", SnapshotSeq: 26,
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("end state\n got %s\nwant %s", mustJSON(t, s), mustJSON(t, want))
	}
}

// TestFoldSplits checks the property the rebuild relies on: folding a log
// in two parts, from a state reduced from the first part, gives the state
// reduced from the whole log, at every split point, and also when the state
// between the parts went through JSON as a stored snapshot does.
func TestFoldSplits(t *testing.T) {
	log := session()
	whole, err := reducer.Reduce(log)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k <= len(log); k++ {
		head, err := reducer.Reduce(log[:k])
		if err != nil {
			t.Fatalf("split %d: head: %v", k, err)
		}
		got, err := head.Apply(log[k:]...)
		if err != nil {
			t.Fatalf("split %d: tail: %v", k, err)
		}
		if !reflect.DeepEqual(got, whole) {
			t.Errorf("split %d:\n got %s\nwant %s", k, mustJSON(t, got), mustJSON(t, whole))
		}

		var stored reducer.State
		if err := json.Unmarshal([]byte(mustJSON(t, head)), &stored); err != nil {
			t.Fatalf("split %d: unmarshal: %v", k, err)
		}
		sameJSON(t, "head through JSON", stored, head)
		got, err = stored.Apply(log[k:]...)
		if err != nil {
			t.Fatalf("split %d: tail after JSON: %v", k, err)
		}
		sameJSON(t, "fold through JSON", got, whole)
	}
}

// TestFoldOneByOne applies the log a fact at a time, keeping every
// intermediate state, and checks no later Apply changed an earlier state.
func TestFoldOneByOne(t *testing.T) {
	log := session()
	states := []reducer.State{{}}
	var frozen []string
	for _, f := range log {
		frozen = append(frozen, mustJSON(t, states[len(states)-1]))
		next, err := states[len(states)-1].Apply(f)
		if err != nil {
			t.Fatalf("fact %d (%s): %v", f.Seq, f.Type, err)
		}
		states = append(states, next)
	}
	for i, j := range frozen {
		if got := mustJSON(t, states[i]); got != j {
			t.Errorf("state after %d facts changed later:\n got %s\nwant %s", i, got, j)
		}
	}
	whole, _ := reducer.Reduce(log)
	if !reflect.DeepEqual(states[len(states)-1], whole) {
		t.Error("one-by-one fold differs from Reduce")
	}
}

// TestApplyDoesNotAlias branches two different futures off one state; each
// must be unaffected by the other, even where the reducer appends to or
// deletes from slices it copied.
func TestApplyDoesNotAlias(t *testing.T) {
	b := newBuilder()
	base := mustReduce(t, append(b.awaitingApprovals(), b.message("m2")))
	// Give the base slices spare capacity, as a decoded or appended state may have.
	base.Inbox = append(make([]reducer.Message, 0, 8), base.Inbox...)
	base.Turn.Pending = append(make([]reducer.Approval, 0, 8), base.Turn.Pending...)
	base.Turn.Answers = make([]reducer.Answer, 0, 8)
	baseJSON := mustJSON(t, base)

	mk := func(msg string, approval, call string, d reducer.Decision) reducer.State {
		t.Helper()
		bb := &builder{seq: b.seq, now: b.now, turn: b.turn}
		s, err := base.Apply(bb.message(msg), bb.answered(approval, call, d))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	left := mk("left", "a1", "call-1", reducer.Approve)
	leftJSON := mustJSON(t, left)
	right := mk("right", "a2", "call-2", reducer.Deny)

	if got := mustJSON(t, base); got != baseJSON {
		t.Errorf("base changed:\n got %s\nwant %s", got, baseJSON)
	}
	if got := mustJSON(t, left); got != leftJSON {
		t.Errorf("left branch changed by the right one:\n got %s\nwant %s", got, leftJSON)
	}
	wantInbox(t, left, "m2", "left")
	wantInbox(t, right, "m2", "right")
	wantPending(t, left, "a2")
	wantPending(t, right, "a1")
	if left.Turn.Answers[0].ApprovalID != "a1" || right.Turn.Answers[0].ApprovalID != "a2" {
		t.Errorf("answers left %+v right %+v", left.Turn.Answers, right.Turn.Answers)
	}
}

func TestReduceNothing(t *testing.T) {
	s, err := reducer.Reduce(nil)
	if err != nil || !reflect.DeepEqual(s, reducer.State{}) {
		t.Errorf("Reduce(nil) = %+v, %v; want the zero State", s, err)
	}
	if n := s.Next(t0, time.Minute); n != (reducer.Need{}) {
		t.Error("a session with no facts needs attention")
	}
}

func TestFactEnds(t *testing.T) {
	ends := map[reducer.Type]bool{reducer.TurnCompleted: true, reducer.TurnFailed: true, reducer.TurnCancelled: true, reducer.TurnInterrupted: true}
	for _, typ := range []reducer.Type{reducer.SessionCreated, reducer.MessageReceived, reducer.TurnStarted,
		reducer.TurnSuspended, reducer.TurnResumed, reducer.ApprovalRequested, reducer.ApprovalAnswered,
		reducer.ExecutionStarted, reducer.ExecutionVerdict, reducer.TurnCompleted, reducer.TurnFailed,
		reducer.TurnCancelled, reducer.MessageSteered, reducer.TurnInterrupted} {
		if got := (reducer.Fact{Type: typ}).Ends(); got != ends[typ] {
			t.Errorf("%s.Ends() = %v", typ, got)
		}
	}
}
