package reducer_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

func TestIllegalTransitions(t *testing.T) {
	cases := []struct {
		name string
		step step
		// reason is part of the TransitionError's reason: it shows the
		// fact was refused for the reason the case is about.
		reason string
	}{
		// Steering.
		{"a rejected message as a fact", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.message("m2", delivery(reducer.SteerReject)))
		}, "a rejected message is not received"},
		{"an unknown delivery", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.message("m2", delivery("shout")))
		}, `unknown delivery "shout"`},
		{"a steer delivery with no open turn", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.message("m1", delivery(reducer.SteerSteer)))
		}, "delivery steer needs an open turn"},
		{"message.steered naming a message not waiting", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.message("m2", delivery(reducer.SteerSteer))), facts(b.steered("m9"))
		}, `message "m9" is not waiting to be steered`},
		{"message.steered twice", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.message("m2", delivery(reducer.SteerSteer)), b.steered("m2")), facts(b.steered("m2"))
		}, `message "m2" is not waiting to be steered`},
		{"message.steered naming nothing", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.message("m2", delivery(reducer.SteerSteer))), facts(b.steered())
		}, "no message named"},
		{"message.steered while suspended", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.suspendedFor(reducer.CauseBudget), b.message("m2", delivery(reducer.SteerSteer))), facts(b.steered("m2"))
		}, "only a running turn delivers messages"},
		{"turn.interrupted with no interrupting message", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.message("m2")), facts(b.interrupted())
		}, "no message interrupted the turn"},
		// Sequence and envelope.
		{"timer without a wake time", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.suspended(reducer.CauseTimer))
		}, "a timer suspension needs a wake time"},
		{"timer with a fault count", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.suspended(reducer.CauseTimer, fault(2, t0.Add(time.Hour))))
		}, "a timer suspension needs a wake time and no fault count"},
		{"timer.set on a budget suspension", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.suspendedFor(reducer.CauseBudget), facts(b.fact(reducer.TimerSet, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, fault(0, t0)))
		}, "not suspended on a timer"},
		{"schedule with a bad cron", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.fact(reducer.ScheduleSet, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"},
				edit(func(f *reducer.Fact) { f.Schedule = &reducer.Schedule{Cron: "every day", Text: "x"} })))
		}, "cron"},
		{"schedule cleared with none", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.fact(reducer.ScheduleCleared, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}))
		}, "no schedule to clear"},
		{"schedule fired twice for one occurrence", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.fact(reducer.ScheduleFired, reducer.Actor{Kind: reducer.ActorSystem, ID: "tick"}, fault(0, t0)))
		}, "no schedule to fire"},
		{"seq gap", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.completed(seq(5)))
		}, "seq 5 does not follow 3"},
		{"seq repeat", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.completed(seq(3)))
		}, "seq 3 does not follow 3"},
		{"seq zero on a new session", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return nil, facts(b.created(seq(0)))
		}, "seq 0 does not follow 0"},
		{"message before session.created", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return nil, facts(b.message("m1"))
		}, "session not created"},
		{"turn.started before session.created", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return nil, facts(b.started("t1"))
		}, "session not created"},
		{"session.created twice", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.created())
		}, "already created"},
		{"session.created with no agent", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return nil, facts(b.created(edit(func(f *reducer.Fact) { f.Agent = "" })))
		}, "no agent"},
		{"fact with no actor", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.message("m1", by(reducer.Actor{ID: "nobody"})))
		}, "no actor"},
		{"session.created with no actor", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return nil, facts(b.created(by(reducer.Actor{})))
		}, "no actor"},
		{"unknown fact type", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.completed(ofType("turn.exploded")))
		}, "unknown fact type"},

		// message.received
		{"message.received without a message", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.message("m1", edit(func(f *reducer.Fact) { f.Message = nil })))
		}, "no message"},
		{"message.received without a message id", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.message(""))
		}, "no message"},

		// turn.started
		{"turn.started while running", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.message("m2")), facts(b.started("t2"))
		}, "already open"},
		{"turn.started while suspended", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.suspendedFor(reducer.CauseBudget), b.message("m2")), facts(b.started("t2"))
		}, "already open"},
		{"turn.started with an empty inbox", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.idle(), facts(b.started("t1"))
		}, "no message to answer"},
		{"turn.started after the inbox was consumed", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.completed()), facts(b.started("t2"))
		}, "no message to answer"},
		{"turn.started without a turn", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.idle(), b.message("m1")), facts(b.started("t1", turnID("")))
		}, "not named"},
		{"turn.started without a stream", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.idle(), b.message("m1")),
				facts(b.started("t1", edit(func(f *reducer.Fact) { f.Stream = "" })))
		}, "not named"},

		// turn.resumed
		{"turn.resumed while idle", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.completed()), facts(b.resumed())
		}, "no open turn"},
		{"turn.resumed while approvals pending", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.resumed())
		}, "2 approval(s) still pending"},
		{"turn.resumed while one of two approvals pending", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.awaitingApprovals(), b.answered("a2", "call-2", reducer.Approve)), facts(b.resumed())
		}, "1 approval(s) still pending"},
		{"turn.resumed while an execution awaits a verdict", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingVerdict(), facts(b.resumed())
		}, "awaits a verdict"},
		{"turn.resumed while running before the lease ran out", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.resumed())
		}, "lease holds"},
		{"turn.resumed while running exactly at the lease", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			p := b.running()
			return p, facts(b.resumed(at(p[len(p)-1].Lease)))
		}, "lease holds"},
		{"turn.resumed with the wrong turn id", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.suspendedFor(reducer.CauseBudget), facts(b.resumed(turnID("t0")))
		}, `turn "t0" is not the open turn "t1"`},
		{"turn.resumed naming no turn", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.suspendedFor(reducer.CauseBudget), facts(b.resumed(turnID("")))
		}, "is not the open turn"},

		// turn.suspended
		{"turn.suspended while suspended", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.suspendedFor(reducer.CauseThrottled), facts(b.suspended(reducer.CauseBudget))
		}, "only a running turn suspends"},
		{"turn.suspended while idle", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.completed()), facts(b.suspended(reducer.CauseBudget))
		}, "no open turn"},
		{"turn.suspended for approval with none pending", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.suspended(reducer.CauseApproval))
		}, "none pending"},
		{"turn.suspended as uncertain without the execution", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.suspended(reducer.CauseUncertain))
		}, "without the execution"},
		{"turn.suspended for budget with a fault count", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.suspended(reducer.CauseBudget, fault(1, time.Time{})))
		}, "carries a fault count or wake time"},
		{"turn.suspended for approval with a wake time", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.requested("a1", "call-1")), facts(b.suspended(reducer.CauseApproval, fault(0, t0.Add(time.Hour))))
		}, "carries a fault count or wake time"},
		{"turn.suspended with a negative fault count", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.suspended(reducer.CauseModelUnavailable, fault(-1, time.Time{})))
		}, "negative fault count"},
		{"turn.suspended for an unknown cause", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.suspended("boredom"))
		}, `unknown cause "boredom"`},
		{"turn.suspended with no cause", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.suspended(""))
		}, "unknown cause"},

		// approval.requested
		{"approval.requested twice for the same id", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.requested("a1", "call-1")), facts(b.requested("a1", "call-2"))
		}, "already pending"},
		{"approval.requested twice for the same tool call", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.requested("a1", "call-1")), facts(b.requested("a2", "call-1"))
		}, "already pending"},
		{"approval.requested for a tool call already answered", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			p := append(b.running(), b.requested("a1", "call-1"), b.suspended(reducer.CauseApproval),
				b.answered("a1", "call-1", reducer.Deny), b.resumed())
			return p, facts(b.requested("a2", "call-1"))
		}, "already answered"},
		{"approval.requested while suspended", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.requested("a3", "call-3"))
		}, "only a running turn requests approval"},
		{"approval.requested without an approval", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.requested("a1", "call-1", edit(func(f *reducer.Fact) { f.Approval = nil })))
		}, "not named"},
		{"approval.requested without a tool call", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.requested("a1", ""))
		}, "not named"},
		{"approval.requested while idle", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.completed()), facts(b.requested("a1", "call-1"))
		}, "no open turn"},

		// approval.answered
		{"approval.answered while running", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.requested("a1", "call-1")), facts(b.answered("a1", "call-1", reducer.Approve))
		}, "not waiting for approval"},
		{"approval.answered while suspended for budget", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.requested("a1", "call-1"), b.suspended(reducer.CauseBudget)),
				facts(b.answered("a1", "call-1", reducer.Approve))
		}, "not waiting for approval"},
		{"approval.answered for an unknown approval", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.answered("a9", "call-1", reducer.Approve))
		}, `approval "a9" is not pending`},
		{"approval.answered twice for the same approval", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.awaitingApprovals(), b.answered("a1", "call-1", reducer.Approve)),
				facts(b.answered("a1", "call-1", reducer.Deny))
		}, `approval "a1" is not pending`},
		{"approval.answered with a mismatched tool call", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.answered("a1", "call-2", reducer.Approve))
		}, "is for tool call call-1, not call-2"},
		{"approval.answered with an unknown decision", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.answered("a1", "call-1", "maybe"))
		}, `unknown decision "maybe"`},
		{"approval.answered without an answer", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(),
				facts(b.answered("a1", "call-1", reducer.Approve, edit(func(f *reducer.Fact) { f.Answer = nil })))
		}, "no answer"},
		{"approval.answered for another turn", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.answered("a1", "call-1", reducer.Approve, turnID("t2")))
		}, "is not the open turn"},

		// execution.*
		{"execution.started while suspended", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.suspendedFor(reducer.CauseBudget), facts(b.execStarted("x1", "call-1"))
		}, "only a running turn executes"},
		{"execution.started twice for the same id", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.execStarted("x1", "call-1")), facts(b.execStarted("x1", "call-2"))
		}, "already started"},
		{"execution.started without a tool call", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.execStarted("x1", ""))
		}, "not named"},
		{"execution.started without an execution", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.execStarted("x1", "call-1", edit(func(f *reducer.Fact) { f.Execution = nil })))
		}, "not named"},
		{"execution.started while idle", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.completed()), facts(b.execStarted("x1", "call-1"))
		}, "no open turn"},
		{"execution.verdict with no uncertain execution", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.suspendedFor(reducer.CauseBudget), facts(b.verdict("x1", reducer.Rerun))
		}, `execution "x1" awaits no verdict`},
		{"execution.verdict while running", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.execStarted("x1", "call-9")), facts(b.verdict("x1", reducer.Rerun))
		}, "awaits no verdict"},
		{"execution.verdict on the wrong execution", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingVerdict(), facts(b.verdict("x2", reducer.Abandon))
		}, `execution "x2" awaits no verdict`},
		{"execution.verdict twice", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.awaitingVerdict(), b.verdict("x1", reducer.Rerun)), facts(b.verdict("x1", reducer.Abandon))
		}, "awaits no verdict"},
		{"execution.verdict with an unknown verdict", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingVerdict(), facts(b.verdict("x1", "shrug"))
		}, "no verdict"},
		{"execution.verdict without a verdict", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingVerdict(),
				facts(b.verdict("x1", reducer.Rerun, edit(func(f *reducer.Fact) { f.Settled = nil })))
		}, "no verdict"},
		// One verdict allows exactly one more run.
		{"a second execution.started for a call without a verdict", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.execStarted("x1", "call-9")), facts(b.execStarted("x2", "call-9", attempt(2)))
		}, "its execution x1 has no rerun verdict"},
		{"a rerun started after an abandon", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.awaitingVerdict(), b.verdict("x1", reducer.Abandon), b.resumed()), facts(b.execStarted("x2", "call-9", attempt(2)))
		}, "its execution x1 has no rerun verdict"},
		{"two reruns started on one verdict", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.awaitingVerdict(), b.verdict("x1", reducer.Rerun), b.resumed(), b.execStarted("x2", "call-9", attempt(2))),
				facts(b.execStarted("x3", "call-9", attempt(3)))
		}, "its execution x2 has no rerun verdict"},
		{"a rerun that skips an attempt", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.awaitingVerdict(), b.verdict("x1", reducer.Rerun), b.resumed()), facts(b.execStarted("x3", "call-9", attempt(3)))
		}, "attempt 3 of tool call call-9, want 2"},
		{"a first execution numbered as a rerun", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.execStarted("x2", "call-9", attempt(2)))
		}, "attempt 2 of tool call call-9, which has none"},
		{"uncertain about an execution never started", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.uncertain("x1", "call-9"))
		}, "x1 is not the newest started for tool call call-9"},
		{"uncertain about an execution a rerun replaced", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.awaitingVerdict(), b.verdict("x1", reducer.Rerun), b.resumed(), b.execStarted("x2", "call-9", attempt(2))),
				facts(b.uncertain("x1", "call-9"))
		}, "x1 is not the newest started for tool call call-9"},
		{"uncertain again about a settled execution", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.awaitingVerdict(), b.verdict("x1", reducer.Rerun), b.resumed()), facts(b.uncertain("x1", "call-9"))
		}, "x1 already has a verdict"},
		{"execution.verdict while idle", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.completed()), facts(b.verdict("x1", reducer.Rerun))
		}, "no open turn"},

		// Ending a turn.
		{"turn.completed while suspended", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.suspendedFor(reducer.CauseBudget), facts(b.completed())
		}, "only a running turn ends this way"},
		{"turn.completed while idle", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.completed()), facts(b.completed())
		}, "no open turn"},
		{"turn.completed for another turn", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.completed(turnID("t2")))
		}, "is not the open turn"},
		{"turn.failed while suspended", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingApprovals(), facts(b.failed())
		}, "only a running turn ends this way"},
		{"turn.failed without a failure", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.failed(edit(func(f *reducer.Fact) { f.Failure = nil })))
		}, "failure not described"},
		{"turn.cancelled while idle", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return append(b.running(), b.cancelled()), facts(b.cancelled())
		}, "no open turn"},
		{"turn.cancelled for another turn", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.awaitingVerdict(), facts(b.cancelled(turnID("t2")))
		}, "is not the open turn"},

		// A step is all or nothing: a legal fact before the illegal one
		// does not survive.
		{"legal fact then illegal fact in one step", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.message("m2"), b.requested("a1", "call-1"), b.suspended("boredom"))
		}, "unknown cause"},
		{"two approvals then an answer while running", func(b *builder) ([]reducer.Fact, []reducer.Fact) {
			return b.running(), facts(b.requested("a1", "call-1"), b.requested("a2", "call-2"),
				b.answered("a1", "call-1", reducer.Approve))
		}, "not waiting for approval"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, twin, apply, applyTwin := run(t, c.step)
			got, err := before.Apply(apply...)
			if err == nil {
				t.Fatalf("Apply accepted the step; state %s", mustJSON(t, got))
			}
			if !errors.Is(err, reducer.ErrIllegal) {
				t.Errorf("errors.Is(%v, ErrIllegal) = false", err)
			}
			var te *reducer.TransitionError
			if !errors.As(err, &te) {
				t.Fatalf("error %T %v is not a *TransitionError", err, err)
			}
			// The error names the last fact: every earlier one was legal.
			bad := apply[len(apply)-1]
			if te.Seq != bad.Seq || te.Type != bad.Type {
				t.Errorf("error names fact %d (%s), want %d (%s)", te.Seq, te.Type, bad.Seq, bad.Type)
			}
			if len(apply) == 1 && te.Status != before.Status {
				t.Errorf("error status %q, want %q", te.Status, before.Status)
			}
			if !strings.Contains(te.Reason, c.reason) {
				t.Errorf("reason %q, want it to mention %q", te.Reason, c.reason)
			}
			if !strings.Contains(err.Error(), te.Reason) {
				t.Errorf("Error() %q lacks the reason", err.Error())
			}
			if !reflect.DeepEqual(got, reducer.State{}) {
				t.Errorf("Apply returned %s with its error, want the zero State", mustJSON(t, got))
			}
			unchanged(t, before, twin, apply, applyTwin)
		})
	}
}

func TestReduceRejectsIllegalLog(t *testing.T) {
	b := newBuilder()
	log := append(b.running(), b.completed(), b.completed())
	s, err := reducer.Reduce(log)
	if !errors.Is(err, reducer.ErrIllegal) {
		t.Fatalf("Reduce error %v, want ErrIllegal", err)
	}
	if !reflect.DeepEqual(s, reducer.State{}) {
		t.Errorf("Reduce returned %+v with its error, want the zero State", s)
	}
}

func TestTransitionErrorMessage(t *testing.T) {
	_, err := reducer.Reduce(facts(newBuilder().message("m1")))
	want := "reducer: fact 1 (message.received) illegal in status new: session not created"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	b := newBuilder()
	_, err = reducer.Reduce(append(b.running(), b.suspended("boredom")))
	want = `reducer: fact 4 (turn.suspended) illegal in status running: unknown cause "boredom"`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if errors.Is(errors.New("illegal transition"), reducer.ErrIllegal) {
		t.Error("an unrelated error matched ErrIllegal")
	}
	if (&reducer.TransitionError{}).Is(errors.New("other")) {
		t.Error("TransitionError.Is matched an unrelated error")
	}
}
