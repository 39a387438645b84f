package agents_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/model"
)

// FuzzLoad loads fuzzed agent files, next to a real script, as a function
// does at startup. A file is refused with errors that are all
// *agents.ConfigError naming it, or every agent it defines is built whole:
// named, with a model, a tool registry and limits that leave some budget.
func FuzzLoad(f *testing.F) {
	full, err := os.ReadFile("testdata/full.json")
	if err != nil {
		f.Fatal(err)
	}
	script, err := os.ReadFile("testdata/scripts/ops.script.json")
	if err != nil {
		f.Fatal(err)
	}
	demoFS, demoName := agents.Demo()
	demo, err := fs.ReadFile(demoFS, demoName)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(full), string(demo),
		one(`{"provider":"scripted","script":` + inlineScript + `}`),
		scripted(`"limits":{"budget":"5s","margin":"10s"}`),
		scripted(`"limits":{"budget":"-1s"}`),
		scripted(`"tools":["get_weather","get_weather"]`),
		scripted(`"approvals":{"nope":"always"}`),
		scripted(`"approvals":{"get_weather":"sometimes"}`),
		scripted(`"tools":[{"name":"x","kind":"http","url":"ftp://h","effect":"read","schema":{"type":"object"}}]`),
		scripted(`"maxOutputTokens":-1`),
		one(`{"provider":"scripted","script":"../../etc/passwd"}`),
		one(`{"provider":"fake","model":"m","apiKeyEnv":"NOPE"}`),
		`{"agents":{}}`, `{"agents":{"":{"provider":"scripted","script":{"steps":[]}}}}`, `{"agents":null}`, `[]`, `{"agents":{"a":{}}} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{
			"cfg/agents.json":             &fstest.MapFile{Data: data},
			"cfg/scripts/ops.script.json": &fstest.MapFile{Data: script},
			"cfg/demo.script.json":        &fstest.MapFile{Data: script},
		}
		d := agents.Deps{
			Providers: map[string]agents.Provider{
				"fake": func(context.Context, agents.Config, string) (model.Model, error) {
					return model.ParseScript([]byte(inlineScript))
				},
			},
			Getenv:   func(k string) string { return map[string]string{"FAKE_KEY": "sk-test"}[k] },
			Declared: agents.DeclaredTools(nil, nil),
		}
		m, err := agents.Load(context.Background(), fsys, "cfg/agents.json", d)
		if err != nil {
			if m != nil {
				t.Fatalf("Load returned agents %v with its error", m)
			}
			checkConfigErrors(t, err)
			return
		}
		if len(m) == 0 {
			t.Fatal("Load accepted a file without agents")
		}
		for name, a := range m {
			switch {
			case a == nil || name == "" || a.Name != name:
				t.Fatalf("agent %q is %+v", name, a)
			case a.Model == nil || a.Tools == nil:
				t.Fatalf("agent %q has no model or no tools: %+v", name, a)
			case a.MaxTokens < 0 || a.MaxToolOutput < 0:
				t.Fatalf("agent %q has negative caps: %+v", name, a)
			}
			l := a.Limits.WithDefaults()
			if l.Budget <= 0 || l.Margin < 0 || l.Margin >= l.Budget {
				t.Fatalf("agent %q: budget %s, margin %s", name, l.Budget, l.Margin)
			}
		}
	})
}

// checkConfigErrors checks that err, and every error it joins, is a
// *agents.ConfigError naming the file.
func checkConfigErrors(t *testing.T, err error) {
	t.Helper()
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			checkConfigErrors(t, e)
		}
		return
	}
	var ce *agents.ConfigError
	if !errors.As(err, &ce) || ce.File != "cfg/agents.json" || !strings.HasPrefix(err.Error(), "cfg/agents.json: ") {
		t.Fatalf("error %q (%T) is not a ConfigError naming the file", err, err)
	}
}
