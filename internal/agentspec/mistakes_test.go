package agentspec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/agents"
)

// refundIn is the input of the refund tool: its schema, as Func derives
// it, is refundSchema, which the agent file's refund declares.
type refundIn struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
}

const refundSchema = `{"type":"object","properties":{"order":{"type":"string"},"amount":{"type":"number"}},` +
	`"required":["order","amount"],"additionalProperties":false}`

// goRefund is the refund tool as a Go agent has it, named name.
func goRefund(name string, opts ...baton.ToolOption) baton.Tool {
	return baton.Func(name, "Refund an order.", func(context.Context, refundIn) (string, error) { return "ok", nil },
		append([]baton.ToolOption{baton.Write()}, opts...)...)
}

// fileRefund is the refund tool as an agent file declares it, named name,
// with more members (each `"key":value`).
func fileRefund(name string, more ...string) string {
	members := append([]string{`"name":` + quote(name), `"kind":"http"`, `"description":"Refund an order."`,
		`"effect":"write"`, `"schema":` + refundSchema, `"url":"https://tools.example.com/refund"`}, more...)
	return "{" + strings.Join(members, ",") + "}"
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// mistake is one agent, "shop", written as a Go agent and as an agent file
// agent, with the same mistake.
type mistake struct {
	name string
	// goAgent sets the Go agent's tools, MCP servers and approvals.
	goAgent func(*baton.Agent)
	// file is the agent file agent's members besides its provider and
	// script.
	file string
	// want is every error, "field: message", the same for both.
	want []string
}

var longName = strings.Repeat("r", 65)

var mistakes = []mistake{
	{
		name: "no mistake",
		goAgent: func(a *baton.Agent) {
			a.Tools = []baton.Tool{goRefund("refund", baton.NeedsApproval(baton.Over("amount", 100)))}
		},
		file: `"tools":[` + fileRefund("refund", `"approval":{"over":{"field":"amount","limit":100}}`) + `]`,
	},
	{
		name: "claim on a field the schema does not have",
		goAgent: func(a *baton.Agent) {
			a.Tools = []baton.Tool{goRefund("refund",
				baton.Claims(baton.ClaimDecl{Namespace: "orders", Field: "ordr", Access: baton.AccessWrite}))}
		},
		file: `"tools":[` + fileRefund("refund", `"claims":[{"namespace":"orders","field":"ordr","access":"write"}]`) + `]`,
		want: []string{`tools[0].claims[0]: tool "refund": claims: field "ordr" is not a property of the input schema (it has amount, order)`},
	},
	{
		name: "claim on a field that is not a string",
		goAgent: func(a *baton.Agent) {
			a.Tools = []baton.Tool{goRefund("refund",
				baton.Claims(baton.ClaimDecl{Namespace: "orders", Field: "order", Access: baton.AccessWrite},
					baton.ClaimDecl{Namespace: "sums", Field: "amount", Access: baton.AccessRead}))}
		},
		file: `"tools":[` + fileRefund("refund", `"claims":[{"namespace":"orders","field":"order","access":"write"},`+
			`{"namespace":"sums","field":"amount","access":"read"}]`) + `]`,
		want: []string{`tools[0].claims[1]: tool "refund": claims: field "amount" is not a string property of the input schema`},
	},
	{
		name: "the tool's approval rule on a field the schema does not have",
		goAgent: func(a *baton.Agent) {
			a.Tools = []baton.Tool{goRefund("refund", baton.NeedsApproval(baton.Over("amout", 100)))}
		},
		file: `"tools":[` + fileRefund("refund", `"approval":{"over":{"field":"amout","limit":100}}`) + `]`,
		want: []string{`tools[0].approval: tool "refund": approval rule over: field "amout" is not a property of the input schema (it has amount, order)`},
	},
	{
		name: "the agent's approval rule on a field of another type",
		goAgent: func(a *baton.Agent) {
			a.Tools = []baton.Tool{goRefund("refund")}
			a.Approvals = map[string]baton.Rule{"refund": baton.PathPrefix("amount", "/big")}
		},
		file: `"tools":[` + fileRefund("refund") + `],"approvals":{"refund":{"pathPrefix":{"field":"amount","prefix":"/big"}}}`,
		want: []string{`approvals.refund: tool "refund": approval rule pathPrefix: field "amount" is not a string property of the input schema`},
	},
	{
		name: "the agent's approval rule on a field the schema does not have",
		goAgent: func(a *baton.Agent) {
			a.Tools = []baton.Tool{goRefund("refund")}
			a.Approvals = map[string]baton.Rule{"refund": baton.Over("amout", 100)}
		},
		file: `"tools":[` + fileRefund("refund") + `],"approvals":{"refund":{"over":{"field":"amout","limit":100}}}`,
		want: []string{`approvals.refund: tool "refund": approval rule over: field "amout" is not a property of the input schema (it has amount, order)`},
	},
	{
		name:    "a tool name a provider refuses",
		goAgent: func(a *baton.Agent) { a.Tools = []baton.Tool{goRefund("Refund Order!")} },
		file:    `"tools":[` + fileRefund("Refund Order!") + `]`,
		want:    []string{`tools[0].name: tool "Refund Order!": name "Refund Order!": a provider takes only 1 to 64 letters, digits, _ or -`},
	},
	{
		name:    "a tool name longer than 64",
		goAgent: func(a *baton.Agent) { a.Tools = []baton.Tool{goRefund(longName)} },
		file:    `"tools":[` + fileRefund(longName) + `]`,
		want:    []string{fmt.Sprintf(`tools[0].name: tool %q: name %q: a provider takes only 1 to 64 letters, digits, _ or -`, longName, longName)},
	},
	{
		name:    "two tools with one name",
		goAgent: func(a *baton.Agent) { a.Tools = []baton.Tool{goRefund("refund"), goRefund("refund")} },
		file:    `"tools":[` + fileRefund("refund") + `,` + fileRefund("refund") + `]`,
		want:    []string{`tools[1]: tool "refund" listed twice`},
	},
	{
		name: "an MCP server's allowed tool with a local tool's name",
		goAgent: func(a *baton.Agent) {
			a.Tools = []baton.Tool{goRefund("refund")}
			a.MCP = []baton.MCPServer{{Name: "shop", URL: "https://mcp.example.com/", Allow: []string{"refund"}}}
		},
		file: `"tools":[` + fileRefund("refund") + `],"mcp":[{"name":"shop","url":"https://mcp.example.com/","allow":["refund"]}]`,
		want: []string{`mcp[0].allow: tool "refund": the agent already has a tool of that name`},
	},
	{
		name: "an MCP server's allowed tool with a name a provider refuses",
		goAgent: func(a *baton.Agent) {
			a.MCP = []baton.MCPServer{{Name: "shop", URL: "https://mcp.example.com/", Allow: []string{"refund.order"}}}
		},
		file: `"mcp":[{"name":"shop","url":"https://mcp.example.com/","allow":["refund.order"]}]`,
		want: []string{`mcp[0].allow: tool "refund.order": name "refund.order": a provider takes only 1 to 64 letters, digits, _ or -`},
	},
}

const script = `{"steps":[{"text":"hi"}]}`

// TestMistakesAreCaughtAlikeAtStart: for each mistake in a tool (a claim
// or an approval rule on a field the schema lacks or of the wrong type, a
// name a provider refuses, two tools of one name), a Go agent checked as
// New checks it (host.Config.Check) and the same agent in an agent file
// (agents.Load) get the same errors, naming the agent, the field and the
// tool. An agent with no mistake passes both.
func TestMistakesAreCaughtAlikeAtStart(t *testing.T) {
	for _, m := range mistakes {
		t.Run(m.name, func(t *testing.T) {
			goErrs := goErrors(t, m)
			fileErrs := fileErrors(t, m)
			if !slices.Equal(goErrs, m.want) {
				t.Errorf("Go agent:\n got %q\nwant %q", goErrs, m.want)
			}
			if !slices.Equal(fileErrs, m.want) {
				t.Errorf("agent file:\n got %q\nwant %q", fileErrs, m.want)
			}
		})
	}
}

// goErrors checks m's Go agent and returns its errors as "field: message",
// each checked to name the agent shop.
func goErrors(t *testing.T, m mistake) []string {
	t.Helper()
	model, err := baton.Script([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	a := baton.Agent{Name: "shop", Model: model}
	m.goAgent(&a)
	var out []string
	for _, e := range leaves(host.Config{Agents: []baton.Agent{a}}.Check()) {
		var ae *baton.AgentError
		if !errors.As(e, &ae) || ae.Agent != "shop" {
			t.Fatalf("%v: want a *baton.AgentError naming shop", e)
		}
		out = append(out, ae.Field+": "+ae.Err.Error())
	}
	return out
}

// fileErrors loads m's agent from an agent file and returns its errors as
// "field: message", each checked to name the file and the agent shop.
func fileErrors(t *testing.T, m mistake) []string {
	t.Helper()
	file := `{"agents":{"shop":{"provider":"scripted","script":` + script + `,` + m.file + `}}}`
	_, err := agents.Load(context.Background(), fstest.MapFS{"agents.json": {Data: []byte(file)}}, "agents.json",
		agents.Deps{Declared: agents.DeclaredTools(nil, nil)})
	var out []string
	for _, e := range leaves(err) {
		var ce *agents.ConfigError
		if !errors.As(e, &ce) || ce.File != "agents.json" || ce.Agent != "shop" {
			t.Fatalf("%v: want an *agents.ConfigError naming agents.json and shop", e)
		}
		out = append(out, ce.Field+": "+ce.Err.Error())
	}
	return out
}

// leaves flattens joined errors into the errors joined.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// TestKitRefusesAMistakenAgent: the test kit starts its Go agents as a
// deployed function does (host.NewOn), so it refuses one with a mistake
// in a tool, with the error Config.Check gives.
func TestKitRefusesAMistakenAgent(t *testing.T) {
	m := mistakes[slices.IndexFunc(mistakes, func(m mistake) bool { return m.name == "a tool name a provider refuses" })]
	model, err := baton.Script([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	a := baton.Agent{Name: "shop", Model: model}
	m.goAgent(&a)
	tb := &fatalTB{}
	defer tb.cleanup()
	done := make(chan struct{})
	go func() {
		defer close(done)
		batontest.New(tb, host.Config{Agents: []baton.Agent{a}})
	}()
	<-done
	if want := `agent "shop": ` + m.want[0]; !strings.Contains(tb.fatal, want) {
		t.Fatalf("the kit: %q, want it to fail with %q", tb.fatal, want)
	}
}

// fatalTB is a batontest.TB whose Fatalf records the message and ends the
// goroutine, as testing.T's does.
type fatalTB struct {
	fatal    string
	cleanups []func()
}

func (*fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalTB) Cleanup(c func()) { f.cleanups = append(f.cleanups, c) }

func (f *fatalTB) cleanup() {
	for _, c := range slices.Backward(f.cleanups) {
		c()
	}
}
