package reducer_test

import (
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

func TestNextReasonAndDue(t *testing.T) {
	cases := []struct {
		name string
		// log builds the session and says when and why it is due.
		log func(b *builder) (log []reducer.Fact, due time.Time, why reducer.Reason, ok bool)
	}{
		{"running: the lease", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := b.running()
			return log, log[len(log)-1].Lease, reducer.ReasonLease, true
		}},
		{"running again after a resume: the new lease", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.suspendedFor(reducer.CauseBudget), b.resumed(lease(t0.Add(time.Hour))))
			return log, t0.Add(time.Hour), reducer.ReasonLease, true
		}},
		{"suspended for approval: the earliest expiry", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(),
				b.requested("a1", "call-1", expires(t0.Add(3*time.Hour))),
				b.requested("a2", "call-2", expires(t0.Add(time.Hour))),
				b.requested("a3", "call-3", expires(t0.Add(2*time.Hour))),
				b.suspended(reducer.CauseApproval))
			return log, t0.Add(time.Hour), reducer.ReasonApproval, true
		}},
		{"suspended for approval, earliest answered: the next expiry", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(),
				b.requested("a1", "call-1", expires(t0.Add(3*time.Hour))),
				b.requested("a2", "call-2", expires(t0.Add(time.Hour))),
				b.suspended(reducer.CauseApproval),
				b.answered("a2", "call-2", reducer.Approve))
			return log, t0.Add(3 * time.Hour), reducer.ReasonApproval, true
		}},
		{"suspended for approval that never expires: not due", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(), b.requested("a1", "call-1", expires(time.Time{})),
				b.suspended(reducer.CauseApproval))
			return log, time.Time{}, reducer.ReasonOperator, false
		}},
		{"suspended for approval, one never expires, listed last: the other's expiry", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(),
				b.requested("a1", "call-1", expires(t0.Add(time.Hour))),
				b.requested("a2", "call-2", expires(time.Time{})),
				b.suspended(reducer.CauseApproval))
			return log, t0.Add(time.Hour), reducer.ReasonApproval, true
		}},
		{"suspended for approval, one never expires, listed first: the other's expiry", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(),
				b.requested("a1", "call-1", expires(time.Time{})),
				b.requested("a2", "call-2", expires(t0.Add(time.Hour))),
				b.suspended(reducer.CauseApproval))
			return log, t0.Add(time.Hour), reducer.ReasonApproval, true
		}},
		{"suspended for approval, all answered: a wake is due", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.awaitingApprovals(), b.answered("a1", "call-1", reducer.Approve),
				b.answered("a2", "call-2", reducer.Deny))
			return log, log[len(log)-1].Time, reducer.ReasonWake, true
		}},
		{"suspended for budget: since", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := b.suspendedFor(reducer.CauseBudget)
			return log, log[len(log)-1].Time, reducer.ReasonWake, true
		}},
		{"suspended for throttling: since", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := b.suspendedFor(reducer.CauseThrottled)
			return log, log[len(log)-1].Time, reducer.ReasonWake, true
		}},
		{"suspended as model-unavailable without a wake time: since", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := b.suspendedFor(reducer.CauseModelUnavailable)
			return log, log[len(log)-1].Time, reducer.ReasonWake, true
		}},
		{"suspended as model-unavailable: when its delayed wake is due", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(), b.suspended(reducer.CauseModelUnavailable, fault(3, t0.Add(time.Hour))))
			return log, t0.Add(time.Hour), reducer.ReasonFault, true
		}},
		{"suspended as tools-unavailable: when its delayed wake is due", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(), b.suspended(reducer.CauseToolsUnavailable, fault(1, t0.Add(time.Hour))))
			return log, t0.Add(time.Hour), reducer.ReasonFault, true
		}},
		{"suspended for a fault, a message came before the wake: still the delayed wake", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(), b.suspended(reducer.CauseThrottled, fault(1, t0.Add(time.Hour))), b.message("m2"))
			return log, t0.Add(time.Hour), reducer.ReasonFault, true
		}},
		{"suspended for throttling with a wake time already past: since", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(), b.suspended(reducer.CauseThrottled, fault(1, t0)))
			return log, log[len(log)-1].Time, reducer.ReasonWake, true
		}},
		{"suspended on a timer: its time, days ahead", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(), b.suspended(reducer.CauseTimer, fault(0, t0.Add(72*time.Hour))))
			return log, t0.Add(72 * time.Hour), reducer.ReasonTimer, true
		}},
		{"suspended on a timer, a message came: still its time", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(), b.suspended(reducer.CauseTimer, fault(0, t0.Add(72*time.Hour))), b.message("m2"))
			return log, t0.Add(72 * time.Hour), reducer.ReasonTimer, true
		}},
		{"suspended for a reaped lease: since", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := b.suspendedFor(reducer.CauseLease)
			return log, log[len(log)-1].Time, reducer.ReasonWake, true
		}},
		{"uncertain: not due", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			return b.awaitingVerdict(), time.Time{}, reducer.ReasonOperator, false
		}},
		{"uncertain, settled: a wake is due", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.awaitingVerdict(), b.verdict("x1", reducer.Abandon))
			return log, log[len(log)-1].Time, reducer.ReasonWake, true
		}},
		{"idle with inbox: due at the last update", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.idle(), b.message("m1"), b.message("m2"))
			return log, log[len(log)-1].Time, reducer.ReasonInbox, true
		}},
		{"idle after a turn with messages queued: due", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			log := append(b.running(), b.message("m2"), b.completed())
			return log, log[len(log)-1].Time, reducer.ReasonInbox, true
		}},
		{"idle empty: not due", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			return b.idle(), time.Time{}, reducer.NoReason, false
		}},
		{"idle after a turn answered everything: not due", func(b *builder) ([]reducer.Fact, time.Time, reducer.Reason, bool) {
			return append(b.running(), b.completed()), time.Time{}, reducer.NoReason, false
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, due, why, ok := c.log(newBuilder())
			s := mustReduce(t, log)
			n := s.Next(t0.Add(-24*time.Hour), time.Minute)
			if gotOK := !n.Due.IsZero(); gotOK != ok || !n.Due.Equal(due) || n.Reason != why {
				t.Errorf("Next() = %+v; want due %v (%v), reason %q", n, due, ok, why)
			}
		})
	}
}

// TestNextAction decides every status and cause at four times: before the
// session is due, just after, past the grace, and past the grace for a
// caller handling the wake itself (grace 0).
func TestNextAction(t *testing.T) {
	const grace = 2 * time.Minute
	type acts struct{ early, due, lost, wakeLost reducer.Action }
	var (
		N, S, R, P, E, W = reducer.None, reducer.Start, reducer.Resume, reducer.Reap, reducer.Expire, reducer.Rewake
	)
	cases := []struct {
		name string
		log  func(b *builder) []reducer.Fact
		want acts
	}{
		{"new session", func(b *builder) []reducer.Fact { return nil }, acts{N, N, N, N}},
		{"idle, empty", func(b *builder) []reducer.Fact { return b.idle() }, acts{N, N, N, N}},
		{"idle, messages waiting", func(b *builder) []reducer.Fact { return append(b.idle(), b.message("m1")) }, acts{S, S, W, S}},
		{"running", func(b *builder) []reducer.Fact { return b.running() }, acts{N, P, P, P}},
		{"suspended for budget", func(b *builder) []reducer.Fact { return b.suspendedFor(reducer.CauseBudget) }, acts{R, R, W, R}},
		{"suspended for a reaped lease", func(b *builder) []reducer.Fact { return b.suspendedFor(reducer.CauseLease) }, acts{R, R, W, R}},
		{"suspended throttled, no wake time", func(b *builder) []reducer.Fact { return b.suspendedFor(reducer.CauseThrottled) }, acts{R, R, W, R}},
		{"suspended throttled, delayed wake", func(b *builder) []reducer.Fact {
			return append(b.running(), b.suspended(reducer.CauseThrottled, fault(1, t0.Add(time.Hour))))
		}, acts{N, R, W, R}},
		{"suspended model-unavailable, delayed wake, a message came", func(b *builder) []reducer.Fact {
			return append(b.running(), b.suspended(reducer.CauseModelUnavailable, fault(2, t0.Add(time.Hour))), b.message("m2"))
		}, acts{N, R, W, R}},
		{"suspended for approval, expiring", func(b *builder) []reducer.Fact {
			return append(b.running(), b.requested("a1", "call-1", expires(t0.Add(time.Hour))), b.suspended(reducer.CauseApproval))
		}, acts{N, E, E, E}},
		{"suspended for approval, never expiring", func(b *builder) []reducer.Fact {
			return append(b.running(), b.requested("a1", "call-1", expires(time.Time{})), b.suspended(reducer.CauseApproval))
		}, acts{N, N, N, N}},
		{"suspended for two approvals", func(b *builder) []reducer.Fact { return b.awaitingApprovals() }, acts{N, E, E, E}},
		{"suspended for approval, all answered", func(b *builder) []reducer.Fact {
			return append(b.awaitingApprovals(), b.answered("a1", "call-1", reducer.Approve), b.answered("a2", "call-2", reducer.Deny))
		}, acts{R, R, W, R}},
		{"suspended, uncertain", func(b *builder) []reducer.Fact { return b.awaitingVerdict() }, acts{N, N, N, N}},
		{"suspended, uncertain, settled", func(b *builder) []reducer.Fact {
			return append(b.awaitingVerdict(), b.verdict("x1", reducer.Rerun))
		}, acts{R, R, W, R}},
		{"ended", func(b *builder) []reducer.Fact { return append(b.running(), b.completed()) }, acts{N, N, N, N}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustReduce(t, c.log(newBuilder()))
			due := s.Next(time.Time{}, grace).Due
			if due.IsZero() {
				due = t0.Add(24 * time.Hour)
			}
			for _, at := range []struct {
				what  string
				now   time.Time
				grace time.Duration
				want  reducer.Action
			}{
				{"a minute before due", due.Add(-time.Minute), grace, c.want.early},
				{"just after due", due.Add(time.Millisecond), grace, c.want.due},
				{"past the grace", due.Add(grace + time.Second), grace, c.want.lost},
				{"past the grace, handling the wake", due.Add(grace + time.Second), 0, c.want.wakeLost},
			} {
				if got := s.Next(at.now, at.grace).Action; got != at.want {
					t.Errorf("%s: Next = %v, want %v", at.what, got, at.want)
				}
			}
		})
	}
}

// A fault suspension's delayed wake resumes the turn when it arrives a
// little early (clocks disagree), but not much earlier.
func TestNextFaultWakeSkew(t *testing.T) {
	b := newBuilder()
	wake := t0.Add(time.Hour)
	s := mustReduce(t, append(b.running(), b.suspended(reducer.CauseThrottled, fault(1, wake))))
	if got := s.Next(wake.Add(-reducer.WakeSkew/2), 0).Action; got != reducer.Resume {
		t.Errorf("half the skew early: %v, want resume", got)
	}
	if got := s.Next(wake.Add(-2*reducer.WakeSkew), 0).Action; got != reducer.None {
		t.Errorf("twice the skew early: %v, want none", got)
	}
}

// Reasons stored in heads before Reason existed read back as the same
// reasons, and only the reasons that wait for a wake can be lost.
func TestReasonWake(t *testing.T) {
	for r, want := range map[reducer.Reason]bool{
		"lease": false, "approval": false, "wake": true, "inbox": true,
		reducer.ReasonFault: true, reducer.ReasonOperator: false, reducer.NoReason: false,
	} {
		if r.Wake() != want {
			t.Errorf("Reason(%q).Wake() = %v", r, !want)
		}
		n := reducer.Need{Reason: r, Due: t0}
		if got := n.Lost(t0.Add(time.Hour), time.Minute); got != want {
			t.Errorf("Need{%q}.Lost = %v", r, got)
		}
	}
	if (reducer.Need{Reason: reducer.ReasonWake, Due: t0}).Lost(t0.Add(time.Hour), 0) {
		t.Error("grace 0 took a wake as lost")
	}
}

// TestNextTimer: a timer is resumed by nothing before its time; once due,
// the tick (grace > 0) sends its wake at once, not only after grace, and
// the worker (grace 0) resumes it.
func TestNextTimer(t *testing.T) {
	b := newBuilder()
	until := t0.Add(72 * time.Hour)
	s := mustReduce(t, append(b.running(), b.suspended(reducer.CauseTimer, fault(0, until))))
	for _, c := range []struct {
		now   time.Time
		grace time.Duration
		want  reducer.Action
	}{
		{until.Add(-time.Hour), 0, reducer.None},
		{until.Add(-time.Hour), time.Minute, reducer.None},
		{until.Add(-reducer.WakeSkew / 2), 0, reducer.Resume},
		{until, 0, reducer.Resume},
		{until, time.Minute, reducer.Rewake},
		{until.Add(time.Second), time.Minute, reducer.Rewake},
	} {
		if n := s.Next(c.now, c.grace); n.Action != c.want || n.Reason != reducer.ReasonTimer {
			t.Errorf("Next(until%+v, %v) = %+v; want %v", c.now.Sub(until), c.grace, n, c.want)
		}
	}
}

// TestNextSchedule: an idle session with a schedule is due at its next
// occurrence (UTC) and Posts from then; fired, the next is a day on; busy,
// it waits for the turn; cleared, it is not due.
func TestNextSchedule(t *testing.T) {
	b := newBuilder()
	op := reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}
	idle := b.idle()
	set := b.fact(reducer.ScheduleSet, op, edit(func(f *reducer.Fact) {
		f.Schedule = &reducer.Schedule{Cron: "30 9 * * *", Text: "standup"}
	}))
	log := append(idle, set)
	s := mustReduce(t, log)
	from := set.Time
	first := time.Date(from.Year(), from.Month(), from.Day(), 9, 30, 0, 0, time.UTC)
	if !first.After(from) {
		first = first.Add(24 * time.Hour)
	}
	if n := s.Next(first.Add(-time.Second), time.Minute); n.Reason != reducer.ReasonSchedule || !n.Due.Equal(first) || n.Action != reducer.None {
		t.Fatalf("before: %+v, want due %v", n, first)
	}
	if n := s.Next(first, time.Minute); n.Action != reducer.Post {
		t.Fatalf("at the occurrence: %+v", n)
	}
	b.now = first.Add(time.Second)
	fired := b.fact(reducer.ScheduleFired, reducer.Actor{Kind: reducer.ActorSystem, ID: "tick"}, fault(0, first))
	s = mustReduce(t, append(log, fired))
	if n := s.Next(first, time.Minute); !n.Due.Equal(first.Add(24 * time.Hour)) {
		t.Fatalf("after firing: %+v", n)
	}
	if n := mustReduce(t, append(log, b.message("m1", seq(3)))).Next(first, time.Minute); n.Reason != reducer.ReasonInbox {
		t.Fatalf("with a message waiting: %+v", n)
	}
	if n := mustReduce(t, append(log, b.fact(reducer.ScheduleCleared, op, seq(3)))).Next(first, time.Minute); n.Reason != reducer.NoReason || !n.Due.IsZero() {
		t.Fatalf("cleared: %+v", n)
	}
}
