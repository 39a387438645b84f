package agents_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/pkg/reducer"
)

// An agent file's onChange loads as the agent's policy; an unknown one is
// refused at load, naming the field.
func TestOnChangeConfig(t *testing.T) {
	t.Parallel()
	for _, p := range []reducer.OnChange{reducer.OnChangeContinue, reducer.OnChangeFail, reducer.OnChangePin} {
		m, err := loadSpend(t, scripted(`"onChange":"`+string(p)+`"`))
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := m.Agent("a"); a.OnChange != p {
			t.Errorf("onChange %q loaded as %q", p, a.OnChange)
		}
	}
	_, err := loadSpend(t, scripted(`"onChange":"sometimes"`))
	var ce *agents.ConfigError
	if !errors.As(err, &ce) || ce.Field != "onChange" || !strings.Contains(err.Error(), `"sometimes": want continue, fail or pin`) {
		t.Fatalf("err = %v, want a ConfigError on onChange", err)
	}
}
