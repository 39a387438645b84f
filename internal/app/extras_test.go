package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/turn"
)

func TestExtrasJoinTheFile(t *testing.T) {
	ctx := context.Background()
	e := testenv.Emulator()
	path := filepath.Join(t.TempDir(), "agents.json")
	cfg := `{"agents":{"helper":{"provider":"scripted","script":{"steps":[{"text":"hi"}]},"tools":["ping"]}}}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ping := tool.Tool{Name: "ping", Description: "Ping.", Effect: tool.Read,
		Run: func(context.Context, tool.Call) (json.RawMessage, error) { return json.RawMessage(`"pong"`), nil }}
	goAgent := &turn.Agent{Name: "go-agent"}

	m, err := app.LoadAgentsWith(ctx, path, e.Clients, app.WithAgents(app.Config{Tools: []tool.Tool{ping}}, goAgent))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["helper"].Tools.Get("ping"); !ok {
		t.Fatal("the file's agent does not have the Go tool it names")
	}
	if m["go-agent"] != goAgent {
		t.Fatal("the Go agent is missing")
	}
	// Without the Go tool, the file names an unknown tool.
	if _, err := app.LoadAgents(ctx, path, e.Clients); err == nil || !strings.Contains(err.Error(), `unknown tool "ping"`) {
		t.Fatalf("no extras: %v", err)
	}
	// A Go agent may not take a file agent's name.
	_, err = app.LoadAgentsWith(ctx, path, e.Clients, app.WithAgents(app.Config{Tools: []tool.Tool{ping}}, &turn.Agent{Name: "helper"}))
	if err == nil || !strings.Contains(err.Error(), `Go agent "helper"`) {
		t.Fatalf("clash: %v", err)
	}
}

// TestDemoToolsAreTheDemoAgentsOnly: the demo tools are built-ins of the
// embedded demo agent only. A file's agent may not name them unless the
// program passes them, and a program with Go agents and no file does not
// get the demo agent.
func TestDemoToolsAreTheDemoAgentsOnly(t *testing.T) {
	ctx := context.Background()
	e := testenv.Emulator()
	path := filepath.Join(t.TempDir(), "agents.json")
	cfg := `{"agents":{"helper":{"provider":"scripted","script":{"steps":[{"text":"hi"}]},"tools":["get_weather"]}}}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := app.LoadAgents(ctx, path, e.Clients); err == nil || !strings.Contains(err.Error(), `unknown tool "get_weather"`) {
		t.Fatalf("a file naming a demo tool: err = %v, want unknown tool", err)
	}
	if m, err := app.LoadAgentsWith(ctx, path, e.Clients, app.Config{Tools: tool.Demo()}); err != nil || !m.Has("helper") {
		t.Fatalf("with the demo tools passed: %v, %v", m, err)
	}
	m, err := app.LoadAgentsWith(ctx, "", e.Clients, app.WithAgents(app.Config{}, &turn.Agent{Name: "mine"}))
	if err != nil || m.Has("demo") || !m.Has("mine") {
		t.Fatalf("Go agents, no file: %v, %v; want only mine", m, err)
	}
	if m, err := app.LoadAgents(ctx, "", e.Clients); err != nil || !m.Has("demo") {
		t.Fatalf("no agents, no file: %v, %v; want the demo", m, err)
	}
	// As the repository's functions do: the demo, with the demo tools passed.
	if m, err := app.LoadAgentsWith(ctx, "", e.Clients, app.Config{Tools: tool.Demo()}); err != nil || !m.Has("demo") {
		t.Fatalf("the demo with the demo tools passed: %v, %v", m, err)
	}
}
