package providers_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/providers"
)

// TestProvidersBuildTheirModels: each provider builds its model from an
// agent's config; a config its SDK refuses is the error and a nil model,
// not a typed nil that would pass for a model.
func TestProvidersBuildTheirModels(t *testing.T) {
	ctx := context.Background()
	clients := awsenv.ForEndpoint("http://127.0.0.1:1")
	names := map[string]bool{}
	for _, p := range providers.All() {
		names[p.Name] = true
		build := p.Build(clients.Config, http.DefaultClient)
		if m, err := build(ctx, agents.Config{Model: "some-model"}, "key"); err != nil || m == nil {
			t.Errorf("%s: model %v, %v; want a model", p.Name, m, err)
		}
		if m, err := build(ctx, agents.Config{}, "key"); err == nil || m != nil {
			t.Errorf("%s: no model named: %#v, %v; want an error and a nil model", p.Name, m, err)
		}
	}
	if len(names) != 3 || !names["anthropic"] || !names["openai"] || !names["bedrock"] {
		t.Errorf("providers %v, want anthropic, bedrock and openai", names)
	}
}
