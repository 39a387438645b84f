package baton_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/providers"
)

// TestMCPServerToolsTakeTheirRules: only the allowed tools of a remote MCP
// server are offered, their annotations set their rules, and the agent's
// Approvals override them; building the agent does not reach the server.
func TestMCPServerToolsTakeTheirRules(t *testing.T) {
	srv := mcptest.Start() // a real MCP server over streamable HTTP
	defer srv.Close()
	model, err := baton.Script([]byte(`{"steps":[{"text":"Nothing to do."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := app.GoAgent(baton.Agent{
		Name:      "files",
		Model:     model,
		MCP:       []baton.MCPServer{{Name: "files", URL: srv.URL, Allow: []string{"lookup", "set_flag", "delete_file"}}},
		Approvals: map[string]baton.Rule{"set_flag": baton.Always()},
	}, providers.MCP())
	if err != nil {
		t.Fatal(err)
	}
	listed, err := agent.Remote.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range agent.Remote.Tools(listed) {
		got = append(got, fmt.Sprintf("%s: %s, idempotent %v, approval %v", tl.Name, tl.Effect, tl.Idempotent, tl.Approval(json.RawMessage(`{}`))))
	}
	want := []string{
		"lookup: read, idempotent true, approval false",
		"set_flag: external, idempotent true, approval true",
		"delete_file: external, idempotent false, approval true",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tools:\n%q\nwant\n%q", got, want)
	}
}
