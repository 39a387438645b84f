package agents

import (
	"fmt"
	"time"

	"github.com/baton-run/baton/internal/tool"
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
