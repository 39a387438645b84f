package agents_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

func loadSpend(t *testing.T, config string) (turn.AgentMap, error) {
	t.Helper()
	fsys := fstest.MapFS{"cfg/agents.json": &fstest.MapFile{Data: []byte(config)}}
	return agents.Load(context.Background(), fsys, "cfg/agents.json", deps(t))
}

func TestSpendConfig(t *testing.T) {
	m, err := loadSpend(t, scripted(`"pricing":{"inputPerMTok":3,"outputPerMTok":15},`+
		`"limits":{"spend":{"turn":{"inputTokens":1000,"cost":0.5},"session":{"outputTokens":900},"onExceeded":"fail"}}`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Agent("a")
	want := turn.Spend{Turn: reducer.Caps{InputTokens: 1000, Cost: 0.5}, Session: reducer.Caps{OutputTokens: 900}, Fail: true}
	if a.Limits.Spend != want {
		t.Errorf("spend = %+v, want %+v", a.Limits.Spend, want)
	}
	if a.Price == nil || *a.Price != (reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}) {
		t.Errorf("price = %+v", a.Price)
	}
	// Without onExceeded a reached cap suspends; without pricing no cost.
	m, err = loadSpend(t, scripted(`"limits":{"spend":{"turn":{"outputTokens":5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := m.Agent("a"); a.Limits.Spend.Fail || a.Limits.Spend.Turn.OutputTokens != 5 || a.Price != nil {
		t.Errorf("agent = %+v", a)
	}
}

func TestBadSpendConfigs(t *testing.T) {
	for _, tc := range []struct{ name, extra, field, msg string }{
		{"negative turn input", `"limits":{"spend":{"turn":{"inputTokens":-1}}}`, "limits.spend.turn.inputTokens", "negative"},
		{"negative session output", `"limits":{"spend":{"session":{"outputTokens":-5}}}`, "limits.spend.session.outputTokens", "negative"},
		{"negative cost", `"limits":{"spend":{"turn":{"cost":-0.1}}}`, "limits.spend.turn.cost", "negative"},
		{"bad onExceeded", `"limits":{"spend":{"onExceeded":"explode"}}`, "limits.spend.onExceeded", `"explode": want suspend or fail`},
		{"unknown cap", `"limits":{"spend":{"turn":{"tokens":5}}}`, "limits.spend", `unknown field "tokens"`},
		{"negative input price", `"pricing":{"inputPerMTok":-3}`, "pricing.inputPerMTok", "negative"},
		{"negative output price", `"pricing":{"outputPerMTok":-1}`, "pricing.outputPerMTok", "negative"},
		{"unknown price field", `"pricing":{"perToken":1}`, "pricing", `unknown field "perToken"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadSpend(t, scripted(tc.extra))
			var ce *agents.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			if ce.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error at field %q: %v; want field %q with %q", ce.Field, err, tc.field, tc.msg)
			}
		})
	}
}
