package agents_test

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/model"
)

// An agent naming one of baton's providers that the program did not
// register still loads (the operator and tick link none); its model refuses
// with UnlinkedError. A name baton does not know is still a config error.
func TestUnregisteredProvider(t *testing.T) {
	ctx := context.Background()
	fsys := fstest.MapFS{"a.json": {Data: []byte(`{"agents":{"x":{"provider":"anthropic","model":"claude"}}}`)}}
	m, err := agents.Load(ctx, fsys, "a.json", agents.Deps{})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	var got error
	for _, err := range m["x"].Model.Stream(ctx, model.Request{}) {
		got = err
	}
	var ue *agents.UnlinkedError
	if !errors.As(got, &ue) || ue.Provider != "anthropic" {
		t.Fatalf("stream error = %v, want UnlinkedError for anthropic", got)
	}
	fsys["b.json"] = &fstest.MapFile{Data: []byte(`{"agents":{"x":{"provider":"nope","model":"m"}}}`)}
	var ce *agents.ConfigError
	if _, err := agents.Load(ctx, fsys, "b.json", agents.Deps{}); !errors.As(err, &ce) || ce.Field != "provider" {
		t.Fatalf("unknown provider: err = %v, want a provider ConfigError", err)
	}
}
