package agents_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/pkg/reducer"
)

func TestCompactionConfig(t *testing.T) {
	m, err := loadSpend(t, scripted(`"compaction":{"inputTokens":50000,"keepTurns":3,"keepSteps":6,"script":{"steps":[{"text":"a summary"}]},`+
		`"pricing":{"inputPerMTok":1,"outputPerMTok":2},"prompt":"Be brief.","maxOutputTokens":500}`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Agent("a")
	c := a.Compaction
	if c == nil || c.InputTokens != 50000 || c.KeepTurns != 3 || c.KeepSteps != 6 || c.Prompt != "Be brief." || c.MaxTokens != 500 ||
		c.Name != "script" || c.Price == nil || *c.Price != (reducer.Price{InputPerMTok: 1, OutputPerMTok: 2}) {
		t.Fatalf("compaction = %+v", c)
	}
	if _, ok := c.Model.(*model.Scripted); !ok || c.Model == a.Model {
		t.Fatalf("summariser %T, want its own script", c.Model)
	}
	// Without a summariser of its own the agent's model summarises.
	m, err = loadSpend(t, scripted(`"compaction":{"inputTokens":900}`))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := m.Agent("a"); a.Compaction == nil || a.Compaction.Model != nil || a.Compaction.KeepTurns != 0 {
		t.Fatalf("compaction = %+v", a.Compaction)
	}
}

func TestCompactionNamedModel(t *testing.T) {
	var asked []string
	d := deps(t)
	d.Providers["named"] = func(_ context.Context, c agents.Config, key string) (model.Model, error) {
		asked = append(asked, c.Model+"/"+key)
		return model.ParseScript([]byte(inlineScript))
	}
	d.Getenv = func(string) string { return "sk-named" }
	cfg := one(`{"provider":"named","model":"big-1","apiKeyEnv":"KEY","compaction":{"inputTokens":100000,"model":"small-1"}}`)
	fsys := fstest.MapFS{"agents.json": &fstest.MapFile{Data: []byte(cfg)}}
	m, err := agents.Load(context.Background(), fsys, "agents.json", d)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Agent("a")
	if a.Compaction == nil || a.Compaction.Name != "small-1" || a.Compaction.Model == nil {
		t.Fatalf("compaction = %+v", a.Compaction)
	}
	if strings.Join(asked, ",") != "big-1/sk-named,small-1/sk-named" {
		t.Fatalf("provider built %v", asked)
	}
}

func TestBadCompactionConfigs(t *testing.T) {
	for _, tc := range []struct{ name, extra, field, msg string }{
		{"no budget", `"compaction":{"keepTurns":2}`, "compaction.inputTokens", "positive"},
		{"negative budget", `"compaction":{"inputTokens":-5}`, "compaction.inputTokens", "positive"},
		{"keep below -1", `"compaction":{"inputTokens":9,"keepTurns":-2}`, "compaction.keepTurns", "-1"},
		{"keep steps below -1", `"compaction":{"inputTokens":9,"keepSteps":-3}`, "compaction.keepSteps", "-1"},
		{"negative max output", `"compaction":{"inputTokens":9,"maxOutputTokens":-1}`, "compaction.maxOutputTokens", "negative"},
		{"negative price", `"compaction":{"inputTokens":9,"pricing":{"inputPerMTok":-1}}`, "compaction.pricing.inputPerMTok", "negative"},
		{"model for a scripted agent", `"compaction":{"inputTokens":9,"model":"x"}`, "compaction.model", "script"},
		{"bad script", `"compaction":{"inputTokens":9,"script":{"steps":[]}}`, "compaction.script", "no steps"},
		{"unknown field", `"compaction":{"inputTokens":9,"budget":3}`, "compaction", `unknown field "budget"`},
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
