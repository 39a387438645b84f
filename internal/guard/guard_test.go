package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/guard"
)

func TestRunFailsClosed(t *testing.T) {
	t.Parallel()
	for name, check := range map[string]guard.Func{
		"error": func(context.Context, guard.Subject) (guard.Decision, error) {
			return guard.Decision{}, errors.New("down")
		},
		"panic": func(context.Context, guard.Subject) (guard.Decision, error) { panic("boom") },
		"timeout": func(ctx context.Context, _ guard.Subject) (guard.Decision, error) {
			<-ctx.Done()
			time.Sleep(time.Millisecond)
			return guard.Decision{Action: guard.Allow}, nil // too late: the check blocked already
		},
		"bad decision": func(context.Context, guard.Subject) (guard.Decision, error) {
			return guard.Decision{Action: "maybe"}, nil
		},
		"redact, no text": func(context.Context, guard.Subject) (guard.Decision, error) {
			return guard.Decision{Action: guard.Redact}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := guard.Guardrail{Name: "g", Stage: guard.Input, Check: check, Timeout: 20 * time.Millisecond}
			d, err := guard.Run(t.Context(), g, guard.Subject{Text: "hi"})
			if err == nil || d.Action != guard.Block || d.Reason != guard.FailedReason {
				t.Fatalf("Run = %+v, %v; want a block with an error", d, err)
			}
		})
	}
}

func TestRunPassesTheSubject(t *testing.T) {
	t.Parallel()
	g := guard.Guardrail{Name: "named", Stage: guard.Output, Check: func(_ context.Context, s guard.Subject) (guard.Decision, error) {
		if s.Guardrail != "named" || s.Stage != guard.Output || s.Text != "text" {
			return guard.Decision{Action: guard.Block, Reason: "wrong subject"}, nil
		}
		return guard.Decision{Action: guard.Allow}, nil
	}}
	if d, err := guard.Run(t.Context(), g, guard.Subject{Text: "text"}); err != nil || d.Action != guard.Allow {
		t.Fatalf("Run = %+v, %v", d, err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, guard.Subject) (guard.Decision, error) {
		return guard.Decision{Action: guard.Allow}, nil
	}
	for _, tc := range []struct {
		gs   []guard.Guardrail
		want string
	}{
		{[]guard.Guardrail{{Stage: guard.Input, Check: ok}}, "no name"},
		{[]guard.Guardrail{{Name: "a", Stage: "middle", Check: ok}}, "stage"},
		{[]guard.Guardrail{{Name: "a", Stage: guard.Input}}, "no check"},
		{[]guard.Guardrail{{Name: "a", Stage: guard.Output, Check: ok, Parallel: true}}, "only an input guardrail"},
		{[]guard.Guardrail{{Name: "a", Stage: guard.Input, Check: ok}, {Name: "a", Stage: guard.Input, Check: ok}}, "twice"},
	} {
		if err := guard.Validate(tc.gs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.gs, err, tc.want)
		}
	}
	if err := guard.Validate([]guard.Guardrail{{Name: "a", Stage: guard.Input, Check: ok}, {Name: "a", Stage: guard.Output, Check: ok}}); err != nil {
		t.Errorf("one name at two stages: %v", err)
	}
}
