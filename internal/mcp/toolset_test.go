package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/tool"
)

// TestToolsetWithoutDialerFailsClearly: a program that registers no MCP
// client (the operator, the tick) still checks an agent's servers, but
// listing and calling their tools fail with a *NoDialerError naming the
// server, and the listed tools keep their approval rules.
func TestToolsetWithoutDialerFailsClearly(t *testing.T) {
	s := mcp.Server{Name: "files", URL: "http://127.0.0.1:1/mcp", Allow: []string{"delete_file"},
		HeaderEnv: map[string]string{"Authorization": "FILES_TOKEN"}}
	ts := mcp.Toolset{Servers: []mcp.Server{s}, Getenv: func(string) string { return "Bearer x" }}
	if err := ts.Check(); err != nil {
		t.Fatalf("check: %v", err)
	}
	empty := ts
	empty.Getenv = func(string) string { return "" }
	var ce *mcp.ConfigError
	if err := empty.Check(); !errors.As(err, &ce) || ce.Field != "headerEnv.Authorization" {
		t.Fatalf("check with the variable unset = %v, want a headerEnv.Authorization ConfigError", err)
	}
	var nd *mcp.NoDialerError
	if _, err := ts.List(context.Background()); !errors.As(err, &nd) || nd.Server != "files" {
		t.Fatalf("list = %v, want a NoDialerError for files", err)
	}
	tools := ts.Tools([]tool.Listed{{Source: "files", Name: "delete_file", Approval: true}})
	if len(tools) != 1 || !tools[0].Approval(json.RawMessage(`{}`)) {
		t.Fatalf("tools = %+v, want delete_file needing approval", tools)
	}
	if _, err := tools[0].Run(context.Background(), tool.Call{Name: "delete_file"}); !errors.As(err, &nd) {
		t.Fatalf("call = %v, want a NoDialerError", err)
	}
}
