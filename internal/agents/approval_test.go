package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/mcp/mcpsdk"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/turn"
)

// What a turn does with a call, in the order settle decides it: the
// schema check first, then the approval rule.
const (
	refused = "refused by the schema"
	asks    = "asks for approval"
	runs    = "runs"
)

// decide is settle's decision for one call: Check, then Approval.
func decide(reg *tool.Registry, name string, input string) string {
	if reg.Check(name, json.RawMessage(input)) != nil {
		return refused
	}
	t, _ := reg.Get(name)
	if t.Approval(json.RawMessage(input)) {
		return asks
	}
	return runs
}

// offered is the registry a turn offers: the agent's own tools, then its
// remote ones as listed now (as turn's offer makes it).
func offered(t *testing.T, a *turn.Agent) *tool.Registry {
	t.Helper()
	own := a.Tools.Tools()
	if a.Remote != nil {
		listed, err := a.Remote.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		own = append(own, a.Remote.Tools(listed)...)
	}
	reg, err := tool.NewRegistry(own...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestApprovalRulesFailClosedForEveryToolKind: a "pay" tool asks over an
// amount of 100 and a "write" tool under /etc, as Go tools (with a typed
// and a loose input), agent-file HTTP tools, and MCP tools from an agent
// file and from a Go agent (loose schemas). A call the rule cannot read
// as the type it expects, or cannot prove outside it, never runs without
// approval; a call it can runs.
func TestApprovalRulesFailClosedForEveryToolKind(t *testing.T) {
	kinds := approvalKinds(t)
	for _, tc := range []struct {
		tool, input string
		safe        bool // runs without approval
	}{
		{"pay", `{"amount":50}`, true},
		{"pay", `{"amount":100}`, true},
		{"pay", `{"amount":250}`, false},
		{"pay", `{"amount":100.000000000000000000001}`, false},
		{"pay", `{"amount":1e400}`, false},
		{"pay", `{"Amount":250}`, false},
		{"pay", `{"AMOUNT":250}`, false},
		{"pay", `{"amount":50,"Amount":250}`, false},
		{"pay", `{"amount":50,"amount":250}`, false},
		{"pay", `{"amount":250,"amount":50}`, false},
		{"pay", `{"amount":"250"}`, false},
		{"pay", `{"amount":"50"}`, false},
		{"pay", `{"amount":null}`, false},
		{"pay", `{"amount":[250]}`, false},
		{"pay", `{"amount":{"value":250}}`, false},
		{"pay", `{"payment":{"amount":250}}`, false},
		{"pay", `{}`, false},

		{"write", `{"path":"/tmp/x"}`, true},
		{"write", `{"path":"/etc/passwd"}`, false},
		{"write", `{"Path":"/etc/passwd"}`, false},
		{"write", `{"path":"/tmp/x","Path":"/etc/passwd"}`, false},
		{"write", `{"path":"/tmp/x","path":"/etc/passwd"}`, false},
		{"write", `{"path":["/etc/passwd"]}`, false},
		{"write", `{"path":{"p":"/etc/passwd"}}`, false},
		{"write", `{"path":null}`, false},
		{"write", `{"path":"/etc/../etc/passwd"}`, false},
		{"write", `{"path":"//etc"}`, false},
		{"write", `{"path":"/tmp/../etc/passwd"}`, false},
		{"write", `{"path":"/ETC/passwd"}`, false},
		{"write", `{"path":"etc/passwd"}`, false},
		{"write", `{"path":"/%65tc/passwd"}`, false},
		{"write", `{"opts":{"path":"/etc/passwd"}}`, false},
		{"write", `{}`, false},
	} {
		for _, k := range kinds {
			got := decide(k.reg, tc.tool, tc.input)
			switch {
			case tc.safe && got != runs:
				t.Errorf("%s: %s(%s) %s, want it to run", k.name, tc.tool, tc.input, got)
			case !tc.safe && got == runs:
				t.Errorf("%s: %s(%s) runs without approval", k.name, tc.tool, tc.input)
			}
		}
	}
}

type approvalKind struct {
	name string
	reg  *tool.Registry
}

func approvalKinds(t *testing.T) []approvalKind {
	t.Helper()
	srv := mcptest.Start()
	t.Cleanup(srv.Close)
	loose := &jsonschema.Schema{Type: "object"}
	for _, name := range []string{"pay", "write"} {
		srv.Add(&sdk.Tool{Name: name, Description: name, InputSchema: loose})
	}
	payRule, writeRule := baton.Over("amount", 100), baton.PathPrefix("path", "/etc")
	m, _ := baton.Script([]byte(inlineScript))

	type payIn struct {
		Amount float64 `json:"amount"`
	}
	type writeIn struct {
		Path string `json:"path"`
	}
	typed, err := app.GoAgent(baton.Agent{Name: "typed", Model: m, Tools: []baton.Tool{
		baton.Func("pay", "", func(context.Context, payIn) (string, error) { return "ok", nil }, baton.NeedsApproval(payRule)),
		baton.Func("write", "", func(context.Context, writeIn) (string, error) { return "ok", nil }, baton.NeedsApproval(writeRule)),
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	anyIn := func(context.Context, map[string]any) (string, error) { return "ok", nil }
	goLoose, err := app.GoAgent(baton.Agent{Name: "loose", Model: m, Tools: []baton.Tool{
		baton.Func("pay", "", anyIn, baton.NeedsApproval(payRule)),
		baton.Func("write", "", anyIn, baton.NeedsApproval(writeRule)),
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	goMCP, err := app.GoAgent(baton.Agent{Name: "mcp", Model: m,
		MCP:       []baton.MCPServer{{Name: "files", URL: srv.URL, Allow: []string{"pay", "write"}}},
		Approvals: map[string]baton.Rule{"pay": payRule, "write": writeRule},
	}, mcpsdk.Dialer{})
	if err != nil {
		t.Fatal(err)
	}

	const rules = `"approvals":{"pay":{"over":{"field":"amount","limit":100}},"write":{"pathPrefix":{"field":"path","prefix":"/etc"}}}`
	httpTool := func(name, rule string) string {
		return fmt.Sprintf(`{"name":%q,"kind":"http","description":"d","effect":"external","schema":{"type":"object"},
			"url":"https://tools.example.com/%s","approval":%s}`, name, name, rule)
	}
	fileHTTP := load(t, scripted(`"tools":[`+httpTool("pay", `{"over":{"field":"amount","limit":100}}`)+`,`+
		httpTool("write", `{"pathPrefix":{"field":"path","prefix":"/etc"}}`)+`]`), agents.DeclaredTools(nil, nil))
	fileMCP, err := loadWith(t, scripted(`"mcp":[{"name":"files","url":"`+srv.URL+`","allow":["pay","write"]}],`+rules), nil)
	if err != nil {
		t.Fatal(err)
	}
	return []approvalKind{
		{"go tool, typed input", offered(t, typed)},
		{"go tool, map input", offered(t, goLoose)},
		{"go agent, mcp tool", offered(t, goMCP)},
		{"agent file, http tool", fileHTTP.tools},
		{"agent file, mcp tool", offered(t, fileMCP["a"])},
	}
}
