package baton_test

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/pkg/agents"
	"github.com/baton-run/baton/pkg/model"
)

// TestGoAgentAndAgentFileRefuseTheSameLimits builds each bad set of limits
// twice, as a Go agent and as an agent file: both are refused, naming the
// same field with the same reason (one agent check).
func TestGoAgentAndAgentFileRefuseTheSameLimits(t *testing.T) {
	m, err := model.ParseScript([]byte(`{"steps":[{"text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		limits baton.Limits
		file   string // the same limits in an agent file
	}{
		{"wakeDelay past SQS", baton.Limits{ModelRetry: model.RetryPolicy{WakeDelay: 16 * time.Minute}},
			`{"modelRetry":{"wakeDelay":"16m"}}`},
		{"maxWakeDelay past SQS", baton.Limits{ModelRetry: model.RetryPolicy{MaxWakeDelay: time.Hour}},
			`{"modelRetry":{"maxWakeDelay":"1h"}}`},
		{"maxBackoff below backoff", baton.Limits{ModelRetry: model.RetryPolicy{Backoff: 2 * time.Second, MaxBackoff: time.Second}},
			`{"modelRetry":{"backoff":"2s","maxBackoff":"1s"}}`},
		{"maxWakeDelay below wakeDelay", baton.Limits{ModelRetry: model.RetryPolicy{WakeDelay: 2 * time.Minute, MaxWakeDelay: time.Minute}},
			`{"modelRetry":{"wakeDelay":"2m","maxWakeDelay":"1m"}}`},
		{"backoff past the budget", baton.Limits{Budget: 10 * time.Second, Margin: time.Second, ModelRetry: model.RetryPolicy{Backoff: 20 * time.Second, MaxBackoff: 30 * time.Second}},
			`{"budget":"10s","margin":"1s","modelRetry":{"backoff":"20s","maxBackoff":"30s"}}`},
		{"negative attempts", baton.Limits{ModelRetry: model.RetryPolicy{Attempts: -1}},
			`{"modelRetry":{"attempts":-1}}`},
		{"negative suspensions", baton.Limits{ModelRetry: model.RetryPolicy{Suspensions: -2}},
			`{"modelRetry":{"maxSuspensions":-2}}`},
		{"negative steps", baton.Limits{MaxStepsPerTurn: -3}, `{"maxStepsPerTurn":-3}`},
		{"margin eats the budget", baton.Limits{Budget: 5 * time.Second, Margin: 10 * time.Second},
			`{"budget":"5s","margin":"10s"}`},
		{"negative spend", baton.Limits{Spend: baton.Spend{Turn: baton.Caps{Cost: -1}}}, `{"spend":{"turn":{"cost":-1}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, goErr := baton.Agent{Name: "a", Model: m, Limits: c.limits}.Build(context.Background())
			var ae *baton.AgentError
			if !errors.As(goErr, &ae) {
				t.Fatalf("Go agent: %v, want an AgentError", goErr)
			}
			cfg := `{"agents":{"a":{"provider":"scripted","script":{"steps":[{"text":"hi"}]},"limits":` + c.file + `}}}`
			fsys := fstest.MapFS{"agents.json": &fstest.MapFile{Data: []byte(cfg)}}
			_, fileErr := agents.Load(context.Background(), fsys, "agents.json", agents.Deps{})
			var ce *agents.ConfigError
			if !errors.As(fileErr, &ce) {
				t.Fatalf("agent file: %v, want a ConfigError", fileErr)
			}
			if ae.Field != ce.Field || ae.Err.Error() != ce.Err.Error() {
				t.Fatalf("Go agent: %s: %v; agent file: %s: %v; want the same field and reason", ae.Field, ae.Err, ce.Field, ce.Err)
			}
		})
	}
}
