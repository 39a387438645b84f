package agentspec

import (
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton"
)

// MaxWakeDelay is the longest delay SQS supports on a message, and so the
// longest a wake can be delayed (wake.MaxDelay).
const MaxWakeDelay = 15 * time.Minute

// CheckLimits is the one check of an agent's limits, for agent files and
// Go agents alike: it refuses negative values, a margin that leaves nothing
// of the budget, a retry backoff that does not fit it, a maximum below what
// it bounds, and a wake delay past what SQS can delay a message. It returns
// the field at fault, named as in an agent file ("limits.modelRetry.wakeDelay"),
// and why.
func CheckLimits(l baton.Limits) (string, error) {
	if field := firstNegative(l); field != "" {
		return field, errors.New("negative")
	}
	full := l.WithDefaults()
	if full.Margin >= full.Budget {
		return "limits.margin", fmt.Errorf("margin %s leaves nothing of the budget %s", full.Margin, full.Budget)
	}
	set, r := l.ModelRetry, full.ModelRetry
	switch {
	case set.MaxBackoff != 0 && set.MaxBackoff < r.Backoff:
		return "limits.modelRetry.maxBackoff", fmt.Errorf("maxBackoff %s is below backoff %s", set.MaxBackoff, r.Backoff)
	case r.Backoff >= full.Budget:
		return "limits.modelRetry.backoff", fmt.Errorf("backoff %s does not fit the budget %s", r.Backoff, full.Budget)
	case set.MaxWakeDelay != 0 && set.MaxWakeDelay < r.WakeDelay:
		return "limits.modelRetry.maxWakeDelay", fmt.Errorf("maxWakeDelay %s is below wakeDelay %s", set.MaxWakeDelay, r.WakeDelay)
	case r.WakeDelay > MaxWakeDelay:
		return "limits.modelRetry.wakeDelay", fmt.Errorf("%s is longer than a wake can be delayed (%s)", r.WakeDelay, MaxWakeDelay)
	case r.MaxWakeDelay > MaxWakeDelay:
		return "limits.modelRetry.maxWakeDelay", fmt.Errorf("%s is longer than a wake can be delayed (%s)", r.MaxWakeDelay, MaxWakeDelay)
	}
	return "", nil
}

// firstNegative names the first field of l that is negative, or "".
func firstNegative(l baton.Limits) string {
	r, t, s := l.ModelRetry, l.Spend.Turn, l.Spend.Session
	for _, d := range []struct {
		field string
		neg   bool
	}{
		{"limits.budget", l.Budget < 0}, {"limits.margin", l.Margin < 0},
		{"limits.maxStepsPerInvocation", l.MaxStepsPerInvocation < 0},
		{"limits.maxStepsPerTurn", l.MaxStepsPerTurn < 0},
		{"limits.maxInvocationsPerTurn", l.MaxInvocationsPerTurn < 0},
		{"limits.leaseGrace", l.LeaseGrace < 0}, {"limits.approvalTTL", l.ApprovalTTL < 0},
		{"limits.liveFlush", l.LiveFlush < 0},
		{"limits.modelRetry.attempts", r.Attempts < 0}, {"limits.modelRetry.backoff", r.Backoff < 0},
		{"limits.modelRetry.maxBackoff", r.MaxBackoff < 0}, {"limits.modelRetry.wakeDelay", r.WakeDelay < 0},
		{"limits.modelRetry.maxWakeDelay", r.MaxWakeDelay < 0}, {"limits.modelRetry.maxSuspensions", r.Suspensions < 0},
		{"limits.spend.turn.inputTokens", t.InputTokens < 0}, {"limits.spend.turn.outputTokens", t.OutputTokens < 0},
		{"limits.spend.turn.cost", t.Cost < 0}, {"limits.spend.session.inputTokens", s.InputTokens < 0},
		{"limits.spend.session.outputTokens", s.OutputTokens < 0}, {"limits.spend.session.cost", s.Cost < 0},
	} {
		if d.neg {
			return d.field
		}
	}
	return ""
}
