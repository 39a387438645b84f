package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/agentspec"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/model"
)

// TestGoAgentAndAgentFileRefuseTheSameLimits builds each bad agent twice,
// as a Go agent and as an agent file: both are refused, naming the same
// field with the same reason (one agent check). Besides the limits it
// covers the other bounds both kinds share: the children's maxDepth and
// maxChildren, the system and compaction prompts, and an MCP server's
// claim namespaces.
func TestGoAgentAndAgentFileRefuseTheSameLimits(t *testing.T) {
	m, err := model.ParseScript([]byte(`{"steps":[{"text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	type bad struct {
		name  string
		agent baton.Agent // Name and Model are set
		file  string      // the same in an agent file: members of the agent
	}
	var cases []bad
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
		cases = append(cases, bad{c.name, baton.Agent{Limits: c.limits}, `"limits":` + c.file})
	}
	long := strings.Repeat("p", agentspec.MaxSystem+1)
	ns := strings.Repeat("n", claims.MaxNamespace+1)
	server := func(namespace string) baton.MCPServer {
		return baton.MCPServer{Name: "gh", URL: "https://mcp.example.com/", Allow: []string{"push"},
			Claims: map[string][]baton.ClaimDecl{"push": {{Namespace: namespace, Field: "branch", Access: baton.AccessWrite}}}}
	}
	serverJSON := func(namespace string) string {
		q, err := json.Marshal(namespace)
		if err != nil {
			t.Fatal(err)
		}
		return `"mcp":[{"name":"gh","url":"https://mcp.example.com/","allow":["push"],"claims":{"push":[{"namespace":` +
			string(q) + `,"field":"branch","access":"write"}]}}]`
	}
	cases = append(cases,
		bad{"maxDepth of 1e9", baton.Agent{Children: baton.Children{Agents: []string{"a"}, MaxDepth: 1e9}}, `"agents":["a"],"maxDepth":1000000000`},
		bad{"maxChildren of 1e9", baton.Agent{Children: baton.Children{Agents: []string{"a"}, MaxChildren: 1e9}}, `"agents":["a"],"maxChildren":1000000000`},
		bad{"maxDepth past the bound", baton.Agent{Children: baton.Children{MaxDepth: 11}}, `"maxDepth":11`},
		bad{"negative maxChildren", baton.Agent{Children: baton.Children{MaxChildren: -1}}, `"maxChildren":-1`},
		bad{"system prompt past the bound", baton.Agent{System: long}, `"system":"` + long + `"`},
		bad{"compaction prompt past the bound", baton.Agent{Compaction: &baton.Compaction{InputTokens: 1000, Prompt: long}},
			`"compaction":{"inputTokens":1000,"prompt":"` + long + `"}`},
		bad{"claim namespace past the bound", baton.Agent{MCP: []baton.MCPServer{server(ns)}}, serverJSON(ns)},
		bad{"claim namespace with NUL", baton.Agent{MCP: []baton.MCPServer{server("orders\x00")}}, serverJSON("orders\x00")},
		bad{"claim namespace with a newline", baton.Agent{MCP: []baton.MCPServer{server("orders\nrefunds")}}, serverJSON("orders\nrefunds")},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := c.agent
			a.Name, a.Model = "a", m
			_, goErr := app.GoAgent(a, nil)
			var ae *baton.AgentError
			if !errors.As(goErr, &ae) {
				t.Fatalf("Go agent: %v, want an AgentError", goErr)
			}
			cfg := `{"agents":{"a":{"provider":"scripted","script":{"steps":[{"text":"hi"}]},` + c.file + `}}}`
			fsys := fstest.MapFS{"agents.json": &fstest.MapFile{Data: []byte(cfg)}}
			_, fileErr := agents.Load(context.Background(), fsys, "agents.json", agents.Deps{})
			var ce *agents.ConfigError
			if !errors.As(fileErr, &ce) {
				t.Fatalf("agent file: %v, want a ConfigError", fileErr)
			}
			if ae.Field != ce.Field || ae.Err.Error() != ce.Err.Error() {
				t.Fatalf("Go agent: %s: %.300v; agent file: %s: %.300v; want the same field and reason", ae.Field, ae.Err, ce.Field, ce.Err)
			}
		})
	}
}
