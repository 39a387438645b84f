package agents

import (
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/turn"
)

// ToolRetry is an agent file's retry policy for a tool's transient errors,
// as baton.Retry is a Go tool's: attempts in all (the first included), the
// first backoff doubling up to maxBackoff (Go durations). A declared tool
// fails transiently when its endpoint answers 429, 502, 503 or 504 or
// cannot be reached, or when Lambda refuses the invocation for a
// retryable reason; a Go tool when it returns baton.Transient.
type ToolRetry struct {
	Attempts   int    `json:"attempts"`
	Backoff    string `json:"backoff,omitempty"`
	MaxBackoff string `json:"maxBackoff,omitempty"`
}

// policy applies an entry's timeout and retry to t: for a declared tool,
// timeout already bounds each request (its default 30s), and is each
// try's bound too.
func policy(t tool.Tool, timeout string, r *ToolRetry) (tool.Tool, error) {
	if timeout != "" {
		d, err := duration(timeout, "")
		if err != nil {
			return t, fmt.Errorf("tool %q: timeout: %w", t.Name, err)
		}
		t.Timeout = d
	}
	if r != nil {
		var err error
		t.Retry.Attempts = r.Attempts
		if t.Retry.Backoff, err = optDuration(r.Backoff); err != nil {
			return t, fmt.Errorf("tool %q: retry.backoff: %w", t.Name, err)
		}
		if t.Retry.MaxBackoff, err = optDuration(r.MaxBackoff); err != nil {
			return t, fmt.Errorf("tool %q: retry.maxBackoff: %w", t.Name, err)
		}
	}
	return t, nil
}

func optDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// CheckTool is the one check of a tool's timeout and retry policy, for
// agent files and Go agents alike, against the agent's limits: nothing
// negative, a backoff that fits in a step (the invocation's budget less its
// margin; a retry whose wait does not fit is not made), and a maxBackoff no
// lower than the backoff. A timeout longer than a step is allowed: the
// step's deadline bounds each try anyway. It returns the field at fault,
// under the tool's ("timeout", "retry.backoff"), and why.
func CheckTool(t tool.Tool, l turn.Limits) (string, error) {
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
