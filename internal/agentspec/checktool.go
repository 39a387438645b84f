package agentspec

import (
	"errors"
	"fmt"

	"github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/tool"
)

// CheckTool is the one check of a tool's timeout and retry policy, for
// agent files and Go agents alike, against the agent's limits: nothing
// negative, a backoff that fits in a step (the invocation's budget less its
// margin; a retry whose wait does not fit is not made), and a maxBackoff no
// lower than the backoff. A timeout longer than a step is allowed: the
// step's deadline bounds each try anyway. It returns the field at fault,
// under the tool's ("timeout", "retry.backoff"), and why.
func CheckTool(t tool.Tool, l baton.Limits) (string, error) {
	full, r := l.WithDefaults(), t.Retry
	room := full.Budget - full.Margin
	switch {
	case t.Timeout < 0:
		return "timeout", errors.New("negative")
	case r.Attempts < 0:
		return "retry.attempts", errors.New("negative")
	case r.Backoff < 0:
		return "retry.backoff", errors.New("negative")
	case r.MaxBackoff < 0:
		return "retry.maxBackoff", errors.New("negative")
	case room <= 0:
		// CheckLimits refuses such limits.
	case r.Backoff >= room && r.Attempts > 1:
		return "retry.backoff", fmt.Errorf("%s does not fit in a step (the budget %s less the margin %s)", r.Backoff, full.Budget, full.Margin)
	case r.MaxBackoff != 0 && r.MaxBackoff < r.Backoff:
		return "retry.maxBackoff", fmt.Errorf("maxBackoff %s is below backoff %s", r.MaxBackoff, r.Backoff)
	}
	return "", nil
}
