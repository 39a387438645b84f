package reducer_test

import (
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

func TestAttention(t *testing.T) {
	cases := []struct {
		name string
		// log builds the session and says when and why it is due.
		log func(b *builder) (log []reducer.Fact, due time.Time, why string, ok bool)
	}{
		{"running: the lease", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := b.running()
			return log, log[len(log)-1].Lease, "lease", true
		}},
		{"running again after a resume: the new lease", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.suspendedFor(reducer.CauseBudget), b.resumed(lease(t0.Add(time.Hour))))
			return log, t0.Add(time.Hour), "lease", true
		}},
		{"suspended for approval: the earliest expiry", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.running(),
				b.requested("a1", "call-1", expires(t0.Add(3*time.Hour))),
				b.requested("a2", "call-2", expires(t0.Add(time.Hour))),
				b.requested("a3", "call-3", expires(t0.Add(2*time.Hour))),
				b.suspended(reducer.CauseApproval))
			return log, t0.Add(time.Hour), "approval", true
		}},
		{"suspended for approval, earliest answered: the next expiry", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.running(),
				b.requested("a1", "call-1", expires(t0.Add(3*time.Hour))),
				b.requested("a2", "call-2", expires(t0.Add(time.Hour))),
				b.suspended(reducer.CauseApproval),
				b.answered("a2", "call-2", reducer.Approve))
			return log, t0.Add(3 * time.Hour), "approval", true
		}},
		{"suspended for approval that never expires: not due", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.running(), b.requested("a1", "call-1", expires(time.Time{})),
				b.suspended(reducer.CauseApproval))
			return log, time.Time{}, "approval", false
		}},
		{"suspended for approval, one never expires, listed last: the other's expiry", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.running(),
				b.requested("a1", "call-1", expires(t0.Add(time.Hour))),
				b.requested("a2", "call-2", expires(time.Time{})),
				b.suspended(reducer.CauseApproval))
			return log, t0.Add(time.Hour), "approval", true
		}},
		{"suspended for approval, one never expires, listed first: the other's expiry", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.running(),
				b.requested("a1", "call-1", expires(time.Time{})),
				b.requested("a2", "call-2", expires(t0.Add(time.Hour))),
				b.suspended(reducer.CauseApproval))
			return log, t0.Add(time.Hour), "approval", true
		}},
		{"suspended for approval, all answered: a wake is due", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.awaitingApprovals(), b.answered("a1", "call-1", reducer.Approve),
				b.answered("a2", "call-2", reducer.Deny))
			return log, log[len(log)-1].Time, "wake", true
		}},
		{"suspended for budget: since", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := b.suspendedFor(reducer.CauseBudget)
			return log, log[len(log)-1].Time, "wake", true
		}},
		{"suspended for throttling: since", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := b.suspendedFor(reducer.CauseThrottled)
			return log, log[len(log)-1].Time, "wake", true
		}},
		{"suspended as model-unavailable without a wake time: since", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := b.suspendedFor(reducer.CauseModelUnavailable)
			return log, log[len(log)-1].Time, "wake", true
		}},
		{"suspended as model-unavailable: when its delayed wake is due", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.running(), b.suspended(reducer.CauseModelUnavailable, fault(3, t0.Add(time.Hour))))
			return log, t0.Add(time.Hour), "wake", true
		}},
		{"suspended as tools-unavailable: when its delayed wake is due", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.running(), b.suspended(reducer.CauseToolsUnavailable, fault(1, t0.Add(time.Hour))))
			return log, t0.Add(time.Hour), "wake", true
		}},
		{"suspended for throttling with a wake time already past: since", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.running(), b.suspended(reducer.CauseThrottled, fault(1, t0)))
			return log, log[len(log)-1].Time, "wake", true
		}},
		{"suspended for a reaped lease: since", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := b.suspendedFor(reducer.CauseLease)
			return log, log[len(log)-1].Time, "wake", true
		}},
		{"uncertain: not due", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			return b.awaitingVerdict(), time.Time{}, "", false
		}},
		{"uncertain, settled: a wake is due", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.awaitingVerdict(), b.verdict("x1", reducer.Abandon))
			return log, log[len(log)-1].Time, "wake", true
		}},
		{"idle with inbox: due at the last update", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.idle(), b.message("m1"), b.message("m2"))
			return log, log[len(log)-1].Time, "inbox", true
		}},
		{"idle after a turn with messages queued: due", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			log := append(b.running(), b.message("m2"), b.completed())
			return log, log[len(log)-1].Time, "inbox", true
		}},
		{"idle empty: not due", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			return b.idle(), time.Time{}, "", false
		}},
		{"idle after a turn answered everything: not due", func(b *builder) ([]reducer.Fact, time.Time, string, bool) {
			return append(b.running(), b.completed()), time.Time{}, "", false
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, due, why, ok := c.log(newBuilder())
			s := mustReduce(t, log)
			gotDue, gotWhy, gotOK := s.Attention()
			if gotOK != ok || !gotDue.Equal(due) || (ok && gotWhy != why) {
				t.Errorf("Attention() = %v, %q, %v; want %v, %q, %v", gotDue, gotWhy, gotOK, due, why, ok)
			}
		})
	}
}
