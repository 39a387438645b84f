package provider

import (
	"testing"

	"github.com/baton-run/baton/internal/model"
)

// TestCallInputTakesOnlyObjects: a tool's input is a JSON object; a
// stream that sends a number, string or array (found by FuzzStream) gives
// no call rather than one no provider accepts back.
func TestCallInputTakesOnlyObjects(t *testing.T) {
	for raw, want := range map[string]string{"": `{}`, " null ": `{}`, `{"a":1}`: `{"a":1}`, ` {} `: `{}`} {
		if got, ok := CallInput(raw); !ok || string(got) != want {
			t.Errorf("CallInput(%q) = %s, %v; want %s", raw, got, ok, want)
		}
	}
	for _, raw := range []string{"7", `"x"`, "[1]", "true", `{"a":`, `{} {}`} {
		if got, ok := CallInput(raw); ok {
			t.Errorf("CallInput(%q) = %s, accepted", raw, got)
		}
	}
	if u := ClampUsage(model.Usage{InputTokens: -5, OutputTokens: 3}); u != (model.Usage{OutputTokens: 3}) {
		t.Errorf("ClampUsage = %+v", u)
	}
}
