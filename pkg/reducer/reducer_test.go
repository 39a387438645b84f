package reducer_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// step is a table case: the facts leading up to it, and the facts it applies.
type step func(b *builder) (prefix, apply []reducer.Fact)

func facts(fs ...reducer.Fact) []reducer.Fact { return fs }

// run builds c twice from fresh builders, so the second copy can tell
// whether applying the first mutated its input.
func run(t *testing.T, c step) (before, twin reducer.State, apply, applyTwin []reducer.Fact) {
	t.Helper()
	prefix, apply := c(newBuilder())
	prefixTwin, applyTwin := c(newBuilder())
	return mustReduce(t, prefix), mustReduce(t, prefixTwin), apply, applyTwin
}

// check inspects the state a legal step led to.
type check func(t *testing.T, before, after reducer.State, applied []reducer.Fact)

type legalCase struct {
	name  string
	step  step
	check check
}

func TestLegalTransitions(t *testing.T) {
	cases := []legalCase{
		{
			name: "session.created as seq 1",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) { return nil, facts(b.created()) },
			check: func(t *testing.T, _, s reducer.State, fs []reducer.Fact) {
				want := reducer.State{Agent: "helper", Owner: "owner-1", Created: fs[0].Time, Updated: fs[0].Time,
					Status: reducer.Idle, LastSeq: 1}
				if !reflect.DeepEqual(s, want) {
					t.Errorf("got %+v, want %+v", s, want)
				}
			},
		},
		{
			name: "message.received while idle grows the inbox",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return facts(b.created(), b.message("m1")), facts(b.message("m2"))
			},
			check: func(t *testing.T, _, s reducer.State, fs []reducer.Fact) {
				if s.Status != reducer.Idle || s.Turn != nil {
					t.Errorf("status %s turn %v, want idle and no turn", s.Status, s.Turn)
				}
				wantInbox(t, s, "m1", "m2")
				if s.Updated != fs[0].Time || s.LastSeq != 3 {
					t.Errorf("updated %v seq %d, want %v and 3", s.Updated, s.LastSeq, fs[0].Time)
				}
			},
		},
		{
			name: "message.received while running queues for the next turn",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) { return b.running(), facts(b.message("m2")) },
			check: func(t *testing.T, before, s reducer.State, _ []reducer.Fact) {
				wantStatus(t, s, reducer.Running, "")
				wantInbox(t, s, "m2")
				if !reflect.DeepEqual(s.Turn, before.Turn) {
					t.Errorf("turn changed: %+v, was %+v", s.Turn, before.Turn)
				}
			},
		},
		{
			name: "message.received while suspended queues for the next turn",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return b.suspendedFor(reducer.CauseBudget), facts(b.message("m2"), b.message("m3"))
			},
			check: func(t *testing.T, before, s reducer.State, _ []reducer.Fact) {
				wantStatus(t, s, reducer.Suspended, reducer.CauseBudget)
				wantInbox(t, s, "m2", "m3")
				if !reflect.DeepEqual(s.Turn, before.Turn) {
					t.Errorf("turn changed: %+v, was %+v", s.Turn, before.Turn)
				}
			},
		},
		{
			name: "turn.started from idle consumes the inbox",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return facts(b.created(), b.message("m1"), b.message("m2")), facts(b.started("t1"))
			},
			check: func(t *testing.T, _, s reducer.State, fs []reducer.Fact) {
				f := fs[0]
				wantStatus(t, s, reducer.Running, "")
				wantInbox(t, s)
				want := &reducer.Turn{ID: "t1", Stream: "stream-t1", Started: f.Time, Since: f.Time, Lease: f.Lease,
					Messages:    []reducer.Message{{ID: "m1", Text: "text of m1"}, {ID: "m2", Text: "text of m2"}},
					Invocations: 1}
				if !reflect.DeepEqual(s.Turn, want) {
					t.Errorf("turn %+v, want %+v", s.Turn, want)
				}
				if f.Lease.IsZero() {
					t.Error("builder gave no lease")
				}
			},
		},
		suspension(reducer.CauseBudget),
		suspension(reducer.CauseThrottled),
		suspension(reducer.CauseModelUnavailable),
		suspension(reducer.CauseToolsUnavailable),
		suspension(reducer.CauseLease),
		{
			name: "turn.suspended for model faults counts them and records the wake",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				p := b.running()
				return p, facts(
					b.suspended(reducer.CauseModelUnavailable, fault(1, t0.Add(time.Hour))),
					b.resumed(),
					b.suspended(reducer.CauseThrottled, fault(2, t0.Add(2*time.Hour))))
			},
			check: func(t *testing.T, _, s reducer.State, fs []reducer.Fact) {
				wantStatus(t, s, reducer.Suspended, reducer.CauseThrottled)
				if s.Turn.Faults != 2 || !s.Turn.Wake.Equal(t0.Add(2*time.Hour)) || s.Turn.Invocations != 2 {
					t.Errorf("faults %d wake %v invocations %d, want 2, %v, 2", s.Turn.Faults, s.Turn.Wake, s.Turn.Invocations, t0.Add(2*time.Hour))
				}
			},
		},
		{
			name: "turn.resumed clears the fault wake but keeps the count",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				p := append(b.running(), b.suspended(reducer.CauseModelUnavailable, fault(3, t0.Add(time.Hour))))
				return p, facts(b.resumed())
			},
			check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
				if s.Turn.Faults != 3 || !s.Turn.Wake.IsZero() {
					t.Errorf("faults %d wake %v, want 3 and none", s.Turn.Faults, s.Turn.Wake)
				}
			},
		},
		{
			name: "a budget suspension resets the fault count",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				p := append(b.running(), b.suspended(reducer.CauseModelUnavailable, fault(2, t0.Add(time.Hour))), b.resumed())
				return p, facts(b.suspended(reducer.CauseBudget))
			},
			check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
				if s.Turn.Faults != 0 || !s.Turn.Wake.IsZero() {
					t.Errorf("faults %d wake %v after a budget suspension", s.Turn.Faults, s.Turn.Wake)
				}
			},
		},
		{
			name: "a reaped lease keeps the fault count",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				p := append(b.running(), b.suspended(reducer.CauseModelUnavailable, fault(2, t0.Add(time.Hour))), b.resumed())
				return p, facts(b.suspended(reducer.CauseLease))
			},
			check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
				if s.Turn.Faults != 2 || !s.Turn.Wake.IsZero() {
					t.Errorf("faults %d wake %v after a reaped lease, want 2 and none", s.Turn.Faults, s.Turn.Wake)
				}
			},
		},
		{
			name: "turn.suspended for approval after approval.requested",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return append(b.running(), b.requested("a1", "call-1")), facts(b.suspended(reducer.CauseApproval))
			},
			check: func(t *testing.T, _, s reducer.State, fs []reducer.Fact) {
				wantStatus(t, s, reducer.Suspended, reducer.CauseApproval)
				wantPending(t, s, "a1")
				if s.Turn.Since != fs[0].Time || !s.Turn.Lease.IsZero() {
					t.Errorf("since %v lease %v, want %v and no lease", s.Turn.Since, s.Turn.Lease, fs[0].Time)
				}
			},
		},
		{
			name: "turn.suspended as uncertain records the execution",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return append(b.running(), b.execStarted("x1", "call-9")), facts(b.uncertain("x1", "call-9"))
			},
			check: func(t *testing.T, _, s reducer.State, fs []reducer.Fact) {
				wantStatus(t, s, reducer.Suspended, reducer.CauseUncertain)
				if !reflect.DeepEqual(s.Turn.Uncertain, fs[0].Execution) {
					t.Errorf("uncertain %+v, want %+v", s.Turn.Uncertain, fs[0].Execution)
				}
				if s.Turn.Uncertain == fs[0].Execution {
					t.Error("state shares the fact's execution pointer")
				}
				if !s.Turn.Lease.IsZero() {
					t.Errorf("lease %v survived the suspension", s.Turn.Lease)
				}
			},
		},
		{
			name: "approval.requested while running",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return b.running(), facts(b.requested("a1", "call-1"))
			},
			check: func(t *testing.T, _, s reducer.State, fs []reducer.Fact) {
				wantStatus(t, s, reducer.Running, "")
				wantPending(t, s, "a1")
				want := *fs[0].Approval
				want.Requested = fs[0].Time // folded from the fact's time
				if !reflect.DeepEqual(s.Turn.Pending[0], want) {
					t.Errorf("pending %+v, want %+v", s.Turn.Pending[0], want)
				}
			},
		},
		{
			name: "two approval.requested in one step",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return b.running(), facts(b.requested("a1", "call-1"), b.requested("a2", "call-2"))
			},
			check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
				wantStatus(t, s, reducer.Running, "")
				wantPending(t, s, "a1", "a2")
			},
		},
		answering("approve one of two", reducer.Approve, "a1"),
		answering("deny one of two", reducer.Deny, "a2"),
		answering("answer both, first then second", reducer.Approve, "a1", "a2"),
		answering("answer both, second then first", reducer.Deny, "a2", "a1"),
		{
			name: "turn.resumed from suspended for budget",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return b.suspendedFor(reducer.CauseBudget), facts(b.resumed())
			},
			check: wantResumed,
		},
		{
			name: "turn.resumed after every approval is answered",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return append(b.awaitingApprovals(), b.answered("a1", "call-1", reducer.Approve),
					b.answered("a2", "call-2", reducer.Deny)), facts(b.resumed())
			},
			check: func(t *testing.T, before, s reducer.State, fs []reducer.Fact) {
				wantResumed(t, before, s, fs)
				if len(s.Turn.Answers) != 2 {
					t.Errorf("answers %+v, want both kept for the resumed turn", s.Turn.Answers)
				}
				if a, ok := s.Turn.Answer("call-2"); !ok || a.Decision != reducer.Deny {
					t.Errorf("Answer(call-2) = %+v, %v; want the denial", a, ok)
				}
			},
		},
		{
			name: "turn.resumed after the verdict on an uncertain execution",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return append(b.awaitingVerdict(), b.verdict("x1", reducer.Rerun)), facts(b.resumed())
			},
			check: wantResumed,
		},
		{
			name: "turn.resumed from running once the lease ran out (takeover)",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				p := b.running()
				b.skip(leaseFor) // the next fact is one second past the lease
				return p, facts(b.resumed(by(system)))
			},
			check: func(t *testing.T, before, s reducer.State, fs []reducer.Fact) {
				if !fs[0].Time.After(before.Turn.Lease) {
					t.Fatalf("builder: resume at %v is not after lease %v", fs[0].Time, before.Turn.Lease)
				}
				wantResumed(t, before, s, fs)
			},
		},
		{
			name: "execution.started while running",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return append(b.running(), b.execStarted("x1", "call-1")), facts(b.execStarted("x2", "call-2"))
			},
			check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
				wantStatus(t, s, reducer.Running, "")
				want := []reducer.Execution{*execution("x1", "call-1"), *execution("x2", "call-2")}
				if !reflect.DeepEqual(s.Turn.Executions, want) {
					t.Errorf("executions %+v, want %+v", s.Turn.Executions, want)
				}
			},
		},
		{
			name: "a rerun verdict allows the call's next execution, which is open",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return append(b.awaitingVerdict(), b.verdict("x1", reducer.Rerun), b.resumed()),
					facts(b.execStarted("x2", "call-9", attempt(2)), b.uncertain("x2", "call-9", attempt(2)))
			},
			check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
				wantStatus(t, s, reducer.Suspended, reducer.CauseUncertain)
				if u := s.Turn.Uncertain; u == nil || u.ID != "x2" || u.Try() != 2 {
					t.Errorf("uncertain %+v, want attempt 2, x2", u)
				}
				if e, ok := s.Turn.Execution("call-9"); !ok || e.ID != "x2" {
					t.Errorf("Execution(call-9) = %+v, %v, want the newest, x2", e, ok)
				}
				if _, ok := s.Turn.Verdict("x2"); ok {
					t.Error("the verdict on x1 reads as one on x2")
				}
			},
		},
		settling(reducer.Rerun),
		settling(reducer.Abandon),
		{
			name: "turn.completed from running",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return b.running(), facts(b.completed(usage(100, 20, 3), snapshot("snap-1")))
			},
			check: func(t *testing.T, before, s reducer.State, fs []reducer.Fact) {
				wantEnded(t, s, reducer.TurnCompleted, 1)
				if s.Usage != (reducer.Usage{InputTokens: 100, OutputTokens: 20, Steps: 3}) {
					t.Errorf("usage %+v", s.Usage)
				}
				if s.LastFailure != nil {
					t.Errorf("last failure %+v, want none", s.LastFailure)
				}
				if s.Snapshot != "snap-1" || s.SnapshotSeq != fs[0].Seq {
					t.Errorf("snapshot %q@%d, want snap-1@%d", s.Snapshot, s.SnapshotSeq, fs[0].Seq)
				}
			},
		},
		{
			name: "turn.failed from running",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return b.running(), facts(b.failed(failure(reducer.FailTool), usage(7, 1, 1)))
			},
			check: func(t *testing.T, _, s reducer.State, fs []reducer.Fact) {
				wantEnded(t, s, reducer.TurnFailed, 1)
				if !reflect.DeepEqual(s.LastFailure, fs[0].Failure) || s.LastFailure == fs[0].Failure {
					t.Errorf("last failure %+v, want a copy of %+v", s.LastFailure, fs[0].Failure)
				}
				if s.Usage != (reducer.Usage{InputTokens: 7, OutputTokens: 1, Steps: 1}) {
					t.Errorf("usage %+v", s.Usage)
				}
				if s.Snapshot != "" || s.SnapshotSeq != 0 {
					t.Errorf("snapshot %q@%d, want none", s.Snapshot, s.SnapshotSeq)
				}
			},
		},
		{
			name: "usage accumulates across turns; a later success clears the failure",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				p := append(b.running(), b.failed(usage(10, 2, 1), snapshot("snap-1")), b.message("m2"))
				return p, facts(b.started("t2"), b.completed(usage(5, 3, 2)))
			},
			check: func(t *testing.T, before, s reducer.State, _ []reducer.Fact) {
				if before.LastFailure == nil || before.Last != reducer.TurnFailed {
					t.Fatalf("prefix did not end in failure: %+v", before)
				}
				wantEnded(t, s, reducer.TurnCompleted, 2)
				if s.Usage != (reducer.Usage{InputTokens: 15, OutputTokens: 5, Steps: 3}) {
					t.Errorf("usage %+v, want the sum of both turns", s.Usage)
				}
				if s.LastFailure != nil {
					t.Errorf("last failure %+v survived a completed turn", s.LastFailure)
				}
				// The second turn took no snapshot: the first one's stays.
				if s.Snapshot != "snap-1" || s.SnapshotSeq != 4 {
					t.Errorf("snapshot %q@%d, want snap-1@4", s.Snapshot, s.SnapshotSeq)
				}
			},
		},
		{
			name: "turn.cancelled from running",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return append(b.running(), b.requested("a1", "call-1")), facts(b.cancelled(usage(1, 1, 1)))
			},
			check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
				wantEnded(t, s, reducer.TurnCancelled, 1)
				if s.Usage.Steps != 1 {
					t.Errorf("usage %+v, want the cancelled turn's", s.Usage)
				}
			},
		},
		{
			name: "turn.cancelled from suspended for approval clears pending",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return append(b.awaitingApprovals(), b.message("m2")), facts(b.cancelled(snapshot("snap-c")))
			},
			check: func(t *testing.T, before, s reducer.State, fs []reducer.Fact) {
				if len(before.Turn.Pending) != 2 {
					t.Fatalf("prefix pending %+v", before.Turn.Pending)
				}
				wantEnded(t, s, reducer.TurnCancelled, 1)
				wantInbox(t, s, "m2")
				if s.Snapshot != "snap-c" || s.SnapshotSeq != fs[0].Seq {
					t.Errorf("snapshot %q@%d", s.Snapshot, s.SnapshotSeq)
				}
			},
		},
		{
			name: "turn.cancelled from suspended as uncertain",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				return b.awaitingVerdict(), facts(b.cancelled())
			},
			check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
				wantEnded(t, s, reducer.TurnCancelled, 1)
			},
		},
		{
			name: "a new turn after an ended one takes the messages queued meanwhile",
			step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
				p := append(b.running(), b.message("m2"), b.completed())
				return p, facts(b.message("m3"), b.started("t2"))
			},
			check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
				wantStatus(t, s, reducer.Running, "")
				wantInbox(t, s)
				if s.Turn.ID != "t2" || len(s.Turn.Messages) != 2 ||
					s.Turn.Messages[0].ID != "m2" || s.Turn.Messages[1].ID != "m3" {
					t.Errorf("turn %+v, want t2 answering m2 and m3", s.Turn)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, twin, apply, applyTwin := run(t, c.step)
			after, err := before.Apply(apply...)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			unchanged(t, before, twin, apply, applyTwin)
			last := apply[len(apply)-1]
			if after.LastSeq != last.Seq || !after.Updated.Equal(last.Time) {
				t.Errorf("lastSeq %d updated %v, want %d and %v", after.LastSeq, after.Updated, last.Seq, last.Time)
			}
			c.check(t, before, after, apply)
		})
	}
}

// suspension: a running turn suspends for a cause that needs nothing else.
func suspension(cause reducer.Cause) legalCase {
	return legalCase{
		name: "turn.suspended for " + string(cause),
		step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.suspended(cause))
		},
		check: func(t *testing.T, before, s reducer.State, fs []reducer.Fact) {
			wantStatus(t, s, reducer.Suspended, cause)
			want := *before.Turn
			want.Cause, want.Since, want.Lease = cause, fs[0].Time, time.Time{}
			if !reflect.DeepEqual(*s.Turn, want) {
				t.Errorf("turn %+v, want %+v", *s.Turn, want)
			}
		},
	}
}

// answering: with a1 and a2 pending, the operator answers ids in order.
func answering(name string, d reducer.Decision, ids ...string) legalCase {
	calls := map[string]string{"a1": "call-1", "a2": "call-2"}
	return legalCase{
		name: "approval.answered: " + name,
		step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			prefix := b.awaitingApprovals()
			var fs []reducer.Fact
			for _, id := range ids {
				fs = append(fs, b.answered(id, calls[id], d, reason("because")))
			}
			return prefix, fs
		},
		check: func(t *testing.T, _, s reducer.State, fs []reducer.Fact) {
			// Still suspended for approval, whether or not any remain.
			wantStatus(t, s, reducer.Suspended, reducer.CauseApproval)
			var left []string
			for _, id := range []string{"a1", "a2"} {
				if !slices.Contains(ids, id) {
					left = append(left, id)
				}
			}
			wantPending(t, s, left...)
			var want []reducer.Answer
			for i, f := range fs {
				a := *f.Answer
				a.By, a.ByKind = f.Actor.ID, f.Actor.Kind // the answer records who gave it
				if i < len(s.Turn.Answers) {
					// and when its approval was requested: before the answer
					if r := s.Turn.Answers[i].Requested; r.IsZero() || r.After(f.Time) {
						t.Errorf("answer %s: requested %v, want a time before the answer's %v", a.ApprovalID, r, f.Time)
					}
					a.Requested = s.Turn.Answers[i].Requested
				}
				want = append(want, a)
			}
			if !reflect.DeepEqual(s.Turn.Answers, want) {
				t.Errorf("answers %+v, want %+v", s.Turn.Answers, want)
			}
			for _, id := range ids {
				if a, ok := s.Turn.Answer(calls[id]); !ok || a.ApprovalID != id || a.Decision != d {
					t.Errorf("Answer(%s) = %+v, %v", calls[id], a, ok)
				}
			}
			if _, ok := s.Turn.Answer("call-none"); ok {
				t.Error("Answer found an answer for a call never asked about")
			}
		},
	}
}

// settling: the operator settles the uncertain execution x1.
func settling(v reducer.Verdict) legalCase {
	return legalCase{
		name: "execution.verdict " + string(v),
		step: func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingVerdict(), facts(b.verdict("x1", v))
		},
		check: func(t *testing.T, _, s reducer.State, _ []reducer.Fact) {
			wantStatus(t, s, reducer.Suspended, reducer.CauseUncertain)
			if s.Turn.Uncertain != nil {
				t.Errorf("uncertain %+v, want settled", s.Turn.Uncertain)
			}
			// The verdict takes its tool call from the uncertain execution.
			want := []reducer.Settled{{ExecutionID: "x1", ToolCallID: "call-9", Verdict: v}}
			if !reflect.DeepEqual(s.Turn.Verdicts, want) {
				t.Errorf("verdicts %+v, want %+v", s.Turn.Verdicts, want)
			}
			if got, ok := s.Turn.Verdict("x1"); !ok || got != want[0] {
				t.Errorf("Verdict(x1) = %+v, %v", got, ok)
			}
			if _, ok := s.Turn.Verdict("x2"); ok {
				t.Error("Verdict found a verdict on an execution never settled")
			}
		},
	}
}

// wantResumed checks a suspended or running turn resumed by fs[0].
func wantResumed(t *testing.T, before, s reducer.State, fs []reducer.Fact) {
	t.Helper()
	wantStatus(t, s, reducer.Running, "")
	f := fs[0]
	if s.Turn.Invocations != before.Turn.Invocations+1 {
		t.Errorf("invocations %d, want %d", s.Turn.Invocations, before.Turn.Invocations+1)
	}
	if s.Turn.Lease != f.Lease || s.Turn.Since != f.Time {
		t.Errorf("lease %v since %v, want %v and %v", s.Turn.Lease, s.Turn.Since, f.Lease, f.Time)
	}
	if s.Turn.ID != before.Turn.ID || s.Turn.Started != before.Turn.Started ||
		!reflect.DeepEqual(s.Turn.Messages, before.Turn.Messages) {
		t.Errorf("turn %+v lost what it was: %+v", s.Turn, before.Turn)
	}
}

func wantStatus(t *testing.T, s reducer.State, status reducer.Status, cause reducer.Cause) {
	t.Helper()
	if s.Status != status {
		t.Fatalf("status %q, want %q", s.Status, status)
	}
	if s.Turn == nil {
		t.Fatalf("no open turn while %s", status)
	}
	if s.Turn.Cause != cause {
		t.Errorf("cause %q, want %q", s.Turn.Cause, cause)
	}
}

func wantEnded(t *testing.T, s reducer.State, how reducer.Type, turns int64) {
	t.Helper()
	if s.Status != reducer.Idle || s.Turn != nil {
		t.Errorf("status %s turn %+v, want idle with no turn", s.Status, s.Turn)
	}
	if s.Last != how || s.Turns != turns {
		t.Errorf("last %s turns %d, want %s and %d", s.Last, s.Turns, how, turns)
	}
}

func wantInbox(t *testing.T, s reducer.State, ids ...string) {
	t.Helper()
	var got []string
	for _, m := range s.Inbox {
		got = append(got, m.ID)
	}
	if !slices.Equal(got, ids) {
		t.Errorf("inbox %v, want %v", got, ids)
	}
}

func wantPending(t *testing.T, s reducer.State, ids ...string) {
	t.Helper()
	var got []string
	for _, p := range s.Turn.Pending {
		got = append(got, p.ID)
	}
	if !slices.Equal(got, ids) {
		t.Errorf("pending %v, want %v", got, ids)
	}
}
