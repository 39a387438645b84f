package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/baton-run/baton/internal/mcp/mcpsdk"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/turn"
	"github.com/baton-run/baton/providers/awslambda"
)

const inlineScript = `{"steps":[{"text":"hi"}]}`

// deps are the test's dependencies: a "fake" provider besides scripted,
// one set environment variable, and declared tools.
func deps(t *testing.T) agents.Deps {
	t.Helper()
	return agents.Deps{
		Builtins: tool.Demo(),
		MCP:      mcpsdk.Dialer{},
		Providers: map[string]agents.Provider{
			"fake": func(_ context.Context, c agents.Config, key string) (model.Model, error) {
				if key != "sk-test" {
					t.Errorf("fake provider got key %q", key)
				}
				return model.ParseScript([]byte(inlineScript))
			},
			"broken": func(context.Context, agents.Config, string) (model.Model, error) {
				return nil, errors.New("cannot reach the provider")
			},
		},
		Getenv: func(k string) string {
			if k == "FAKE_KEY" {
				return "sk-test"
			}
			return ""
		},
		Declared: agents.DeclaredTools(nil, nil),
	}
}

// one wraps an agent body as the only agent, "a", of a file.
func one(body string) string { return `{"agents":{"a":` + body + `}}` }

// scripted is an agent body: the scripted provider plus extra members.
func scripted(extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return one(`{"provider":"scripted","script":` + inlineScript + extra + `}`)
}

// decl is a declared tool, valid unless members override its fields.
func decl(members string) string {
	base := map[string]any{
		"name": "lookup", "kind": "http", "description": "Look up.", "effect": "read",
		"schema": map[string]any{"type": "object"}, "url": "https://tools.example.com/lookup",
	}
	var over map[string]any
	if err := json.Unmarshal([]byte("{"+members+"}"), &over); err != nil {
		panic(err)
	}
	for k, v := range over {
		if v == nil {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	b, _ := json.Marshal(base)
	return scripted(`"tools":[` + string(b) + `]`)
}

// configErrors lists the ConfigErrors in err, which may be joined.
func configErrors(err error) []*agents.ConfigError {
	var ce *agents.ConfigError
	if errors.As(err, &ce) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			var out []*agents.ConfigError
			for _, e := range j.Unwrap() {
				out = append(out, configErrors(e)...)
			}
			return out
		}
		return []*agents.ConfigError{ce}
	}
	return nil
}

func TestBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		files  map[string]string // more files next to agents.json
		deps   func(*agents.Deps)
		agent  string // "" for file-level errors
		field  string
		msg    string
	}{
		// The model.
		{name: "unknown provider", config: one(`{"provider":"gpt","model":"x"}`), agent: "a", field: "provider", msg: `unknown provider "gpt"`},
		{name: "missing provider", config: one(`{"model":"x"}`), agent: "a", field: "provider", msg: "missing"},
		{name: "missing model", config: one(`{"provider":"fake"}`), agent: "a", field: "model", msg: "missing"},
		{name: "provider fails", config: one(`{"provider":"broken","model":"x"}`), agent: "a", field: "provider", msg: "cannot reach the provider"},
		{name: "empty apiKeyEnv variable", config: one(`{"provider":"fake","model":"x","apiKeyEnv":"NOT_SET_ANYWHERE"}`), agent: "a", field: "apiKeyEnv", msg: "NOT_SET_ANYWHERE is empty"},
		{name: "missing script", config: one(`{"provider":"scripted"}`), agent: "a", field: "script", msg: "missing"},
		{name: "script file not found", config: one(`{"provider":"scripted","script":"nope.script.json"}`), agent: "a", field: "script", msg: "nope.script.json"},
		{name: "script file invalid", config: one(`{"provider":"scripted","script":"empty.script.json"}`), files: map[string]string{"empty.script.json": `{"steps":[]}`}, agent: "a", field: "script", msg: "no steps"},
		{name: "inline script invalid", config: one(`{"provider":"scripted","script":{"steps":[{"delay":"soon","text":"x"}]}}`), agent: "a", field: "script", msg: "bad delay"},
		{name: "script not a path or object", config: one(`{"provider":"scripted","script":42}`), agent: "a", field: "script", msg: "parse script"},

		// Tools and approvals.
		{name: "unknown tool", config: scripted(`"tools":["get_weather","launch_missiles"]`), agent: "a", field: "tools[1]", msg: `unknown tool "launch_missiles"`},
		{name: "tool listed twice", config: scripted(`"tools":["get_weather","search_docs","get_weather"]`), agent: "a", field: "tools[2]", msg: `"get_weather" listed twice`},
		{name: "builtin and declared share a name", config: scripted(`"tools":["get_weather",{"name":"get_weather","kind":"http","description":"d","effect":"read","schema":{"type":"object"},"url":"https://x.example/"}]`), agent: "a", field: "tools[1]", msg: "listed twice"},
		{name: "approval for a missing tool", config: scripted(`"tools":["get_weather"],"approvals":{"send_email":"always"}`), agent: "a", field: "approvals.send_email", msg: "does not have"},
		{name: "approval rule word", config: scripted(`"tools":["get_weather"],"approvals":{"get_weather":"sometimes"}`), agent: "a", field: "approvals.get_weather", msg: `"sometimes"`},
		{name: "approval rule empty object", config: scripted(`"tools":["get_weather"],"approvals":{"get_weather":{}}`), agent: "a", field: "approvals.get_weather", msg: "needs pathPrefix or over"},
		{name: "approval rule number", config: scripted(`"tools":["get_weather"],"approvals":{"get_weather":42}`), agent: "a", field: "approvals.get_weather", msg: "parse"},
		{name: "approval rule unknown member", config: scripted(`"tools":["get_weather"],"approvals":{"get_weather":{"over":{"field":"n","limit":1},"under":{}}}`), agent: "a", field: "approvals.get_weather", msg: `unknown field "under"`},
		{name: "approval rule without field", config: scripted(`"tools":["get_weather"],"approvals":{"get_weather":{"over":{"limit":100}}}`), agent: "a", field: "approvals.get_weather", msg: "over needs a field"},
		{name: "approval prefix without field", config: scripted(`"tools":["get_weather"],"approvals":{"get_weather":{"pathPrefix":{"prefix":"/etc"}}}`), agent: "a", field: "approvals.get_weather", msg: "pathPrefix needs a field"},
		{name: "approval limit not a number", config: scripted(`"tools":["get_weather"],"approvals":{"get_weather":{"over":{"field":"n","limit":"100"}}}`), agent: "a", field: "approvals.get_weather", msg: "parse"},

		// Declared tools.
		{name: "declared bad kind", config: decl(`"kind":"grpc"`), agent: "a", field: "tools[0]", msg: `kind "grpc"`},
		{name: "declared no kind", config: decl(`"kind":null`), agent: "a", field: "tools[0]", msg: `kind ""`},
		{name: "declared bad effect", config: decl(`"effect":"delete"`), agent: "a", field: "tools[0]", msg: `effect "delete"`},
		{name: "declared no name", config: decl(`"name":null`), agent: "a", field: "tools[0]", msg: "no name"},
		{name: "declared schema missing", config: decl(`"schema":null`), agent: "a", field: "tools[0]", msg: "schema must be"},
		{name: "declared schema not an object type", config: decl(`"schema":{"type":"string"}`), agent: "a", field: "tools[0]", msg: "schema must be"},
		{name: "declared schema does not compile", config: decl(`"schema":{"type":"object","properties":{"a":{"type":"nope"}}}`), agent: "a", field: "tools[0]", msg: "schema does not compile"},
		{name: "declared schema remote ref", config: decl(`"schema":{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`), agent: "a", field: "tools[0]", msg: "self-contained"},
		{name: "declared http missing url", config: decl(`"url":null`), agent: "a", field: "tools[0]", msg: "needs url"},
		{name: "declared http relative url", config: decl(`"url":"tools.example.com/lookup"`), agent: "a", field: "tools[0]", msg: "absolute http or https URL"},
		{name: "declared http other scheme", config: decl(`"url":"ftp://tools.example.com/lookup"`), agent: "a", field: "tools[0]", msg: "absolute http or https URL"},
		{name: "declared lambda missing arn", config: decl(`"kind":"lambda","url":null`), agent: "a", field: "tools[0]", msg: "needs arn"},
		{name: "declared bad timeout", config: decl(`"timeout":"fast"`), agent: "a", field: "tools[0]", msg: "timeout"},
		{name: "declared negative timeout", config: decl(`"timeout":"-1s"`), agent: "a", field: "tools[0]", msg: "not positive"},
		{name: "declared bad approval", config: decl(`"approval":"maybe"`), agent: "a", field: "tools[0]", msg: `"maybe"`},
		{name: "declared unknown member", config: decl(`"retries":3`), agent: "a", field: "tools[0]", msg: `unknown field "retries"`},
		{name: "declared negative retry", config: decl(`"retry":{"attempts":-1}`), agent: "a", field: "tools[0].retry.attempts", msg: "negative"},

		// A tool's timeout and retry policy.
		{name: "tool policy negative attempts", config: scripted(`"tools":[{"name":"get_weather","retry":{"attempts":-1}}]`), agent: "a", field: "tools[0].retry.attempts", msg: "negative"},
		{name: "tool policy maxBackoff below backoff", config: scripted(`"tools":[{"name":"get_weather","retry":{"attempts":3,"backoff":"2s","maxBackoff":"1s"}}]`), agent: "a", field: "tools[0].retry.maxBackoff", msg: "below backoff"},
		{name: "tool policy backoff past the step", config: scripted(`"tools":[{"name":"get_weather","retry":{"attempts":2,"backoff":"2h"}}]`), agent: "a", field: "tools[0].retry.backoff", msg: "does not fit in a step"},
		{name: "tool policy bad backoff", config: scripted(`"tools":[{"name":"get_weather","retry":{"attempts":2,"backoff":"soon"}}]`), agent: "a", field: "tools[0]", msg: "retry.backoff"},
		{name: "tool policy bad timeout", config: scripted(`"tools":[{"name":"get_weather","timeout":"0s"}]`), agent: "a", field: "tools[0]", msg: "not positive"},
		{name: "tool policy unknown tool", config: scripted(`"tools":[{"name":"nope","timeout":"5s"}]`), agent: "a", field: "tools[0]", msg: `unknown tool "nope"`},
		{name: "tool policy unknown member", config: scripted(`"tools":[{"name":"get_weather","retries":3}]`), agent: "a", field: "tools[0]", msg: `unknown field "retries"`},
		{name: "declared tool refused", config: decl(``), deps: func(d *agents.Deps) { d.Declared = nil }, agent: "a", field: "tools[0]", msg: "no declared tools here"},

		// Limits.
		{name: "bad budget", config: scripted(`"limits":{"budget":"soon"}`), agent: "a", field: "limits.budget", msg: `"soon"`},
		{name: "negative margin", config: scripted(`"limits":{"margin":"-5s"}`), agent: "a", field: "limits.margin", msg: "not positive"},
		{name: "zero approvalTTL", config: scripted(`"limits":{"approvalTTL":"0s"}`), agent: "a", field: "limits.approvalTTL", msg: "not positive"},
		{name: "bad leaseGrace", config: scripted(`"limits":{"leaseGrace":"1 minute"}`), agent: "a", field: "limits.leaseGrace", msg: "1 minute"},
		{name: "bad throttleDelay", config: scripted(`"limits":{"throttleDelay":"3"}`), agent: "a", field: "limits.throttleDelay", msg: "missing unit"},
		{name: "bad modelRetry backoff", config: scripted(`"limits":{"modelRetry":{"backoff":"soon"}}`), agent: "a", field: "limits.modelRetry.backoff", msg: `"soon"`},
		{name: "zero modelRetry maxBackoff", config: scripted(`"limits":{"modelRetry":{"maxBackoff":"0s"}}`), agent: "a", field: "limits.modelRetry.maxBackoff", msg: "not positive"},
		{name: "modelRetry maxBackoff below backoff", config: scripted(`"limits":{"modelRetry":{"backoff":"2s","maxBackoff":"1s"}}`), agent: "a", field: "limits.modelRetry.maxBackoff", msg: "below backoff 2s"},
		{name: "modelRetry backoff over budget", config: scripted(`"limits":{"budget":"1m","modelRetry":{"backoff":"2m"}}`), agent: "a", field: "limits.modelRetry.backoff", msg: "does not fit the budget"},
		{name: "modelRetry maxWakeDelay below wakeDelay", config: scripted(`"limits":{"modelRetry":{"wakeDelay":"2m","maxWakeDelay":"1m"}}`), agent: "a", field: "limits.modelRetry.maxWakeDelay", msg: "below wakeDelay 2m"},
		{name: "modelRetry wakeDelay past SQS", config: scripted(`"limits":{"modelRetry":{"wakeDelay":"20m"}}`), agent: "a", field: "limits.modelRetry.wakeDelay", msg: "longer than a wake can be delayed"},
		{name: "modelRetry maxWakeDelay past SQS", config: scripted(`"limits":{"modelRetry":{"maxWakeDelay":"1h"}}`), agent: "a", field: "limits.modelRetry.maxWakeDelay", msg: "longer than a wake can be delayed"},
		{name: "negative modelRetry attempts", config: scripted(`"limits":{"modelRetry":{"attempts":-1}}`), agent: "a", field: "limits.modelRetry.attempts", msg: "negative"},
		{name: "negative modelRetry maxSuspensions", config: scripted(`"limits":{"modelRetry":{"maxSuspensions":-2}}`), agent: "a", field: "limits.modelRetry.maxSuspensions", msg: "negative"},
		{name: "unknown modelRetry member", config: scripted(`"limits":{"modelRetry":{"tries":3}}`), agent: "a", field: "limits.modelRetry", msg: `unknown field "tries"`},
		{name: "margin equals budget", config: scripted(`"limits":{"budget":"30s","margin":"30s"}`), agent: "a", field: "limits.margin", msg: "leaves nothing"},
		{name: "margin over budget", config: scripted(`"limits":{"budget":"30s","margin":"1m"}`), agent: "a", field: "limits.margin", msg: "leaves nothing"},
		{name: "default margin over budget", config: scripted(`"limits":{"budget":"5s"}`), agent: "a", field: "limits.margin", msg: "leaves nothing"},
		{name: "negative steps per invocation", config: scripted(`"limits":{"maxStepsPerInvocation":-1}`), agent: "a", field: "limits.maxStepsPerInvocation", msg: "negative"},
		{name: "negative steps per turn", config: scripted(`"limits":{"maxStepsPerTurn":-3}`), agent: "a", field: "limits.maxStepsPerTurn", msg: "negative"},
		{name: "budget not a string", config: scripted(`"limits":{"budget":60}`), agent: "a", field: "limits.budget", msg: "parse"},
		{name: "unknown limit", config: scripted(`"limits":{"budjet":"1m"}`), agent: "a", field: "limits.budjet", msg: `unknown field "budjet"`},
		{name: "negative maxOutputTokens", config: scripted(`"maxOutputTokens":-1`), agent: "a", field: "maxOutputTokens", msg: "negative"},
		{name: "negative maxToolOutput", config: scripted(`"maxToolOutput":-1`), agent: "a", field: "maxToolOutput", msg: "negative"},
		{name: "maxOutputTokens not a number", config: scripted(`"maxOutputTokens":"lots"`), agent: "a", field: "maxOutputTokens", msg: "parse"},

		// The file.
		{name: "unknown agent field", config: scripted(`"temperature":0.2`), agent: "a", field: "temperature", msg: `unknown field "temperature"`},
		{name: "unknown top-level field", config: `{"agents":{"a":{"provider":"scripted","script":` + inlineScript + `}},"agnets":{}}`, field: "agnets", msg: `unknown field "agnets"`},
		{name: "trailing garbage", config: scripted(``) + ` ,`, msg: "trailing data"},
		{name: "second object", config: scripted(``) + `{}`, msg: "trailing data"},
		{name: "not JSON", config: `{"agents":`, msg: "parse"},
		{name: "no agents", config: `{"agents":{}}`, field: "agents", msg: "no agents"},
		{name: "empty file object", config: `{}`, field: "agents", msg: "no agents"},
		{name: "agent not an object", config: one(`5`), agent: "a", msg: "parse"},
		{name: "error names the right agent", config: `{"agents":{"good":{"provider":"scripted","script":` + inlineScript + `},"bad":{"provider":"scripted","script":` + inlineScript + `,"tools":["nope"]}}}`, agent: "bad", field: "tools[0]", msg: `unknown tool "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"cfg/agents.json": &fstest.MapFile{Data: []byte(tc.config)}}
			for name, data := range tc.files {
				fsys["cfg/"+name] = &fstest.MapFile{Data: []byte(data)}
			}
			d := deps(t)
			if tc.deps != nil {
				tc.deps(&d)
			}
			m, err := agents.Load(context.Background(), fsys, "cfg/agents.json", d)
			if err == nil {
				t.Fatalf("Load accepted the config: %v", m)
			}
			var ce *agents.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *agents.ConfigError", err, err)
			}
			all := configErrors(err)
			if len(all) != 1 {
				t.Fatalf("got %d errors, want 1: %v", len(all), err)
			}
			ce = all[0]
			if ce.File != "cfg/agents.json" || ce.Agent != tc.agent || ce.Field != tc.field {
				t.Errorf("error at file %q agent %q field %q, want %q %q %q", ce.File, ce.Agent, ce.Field, "cfg/agents.json", tc.agent, tc.field)
			}
			msg := err.Error()
			for _, want := range []string{"cfg/agents.json", tc.field, tc.msg} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			if tc.agent != "" && !strings.Contains(msg, `agent "`+tc.agent+`"`) {
				t.Errorf("message %q does not name agent %q", msg, tc.agent)
			}
			if ce.Unwrap() == nil {
				t.Errorf("ConfigError wraps nothing")
			}
		})
	}
}

// TestBadConfigReportsEveryAgent checks Build reports all problems at once.
func TestBadConfigReportsEveryAgent(t *testing.T) {
	cfg := `{"agents":{
		"x":{"provider":"scripted","script":` + inlineScript + `,"tools":["nope"],"maxOutputTokens":-1},
		"y":{"provider":"gpt"}}}`
	f, err := agents.Parse("agents.json", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	_, err = agents.Build(context.Background(), fstest.MapFS{}, "agents.json", f, deps(t))
	got := map[string]bool{}
	for _, ce := range configErrors(err) {
		got[ce.Agent+" "+ce.Field] = true
	}
	for _, want := range []string{"x tools[0]", "x maxOutputTokens", "y provider"} {
		if !got[want] {
			t.Errorf("missing error %q; got %v", want, err)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := agents.Load(context.Background(), fstest.MapFS{}, "agents.json", deps(t))
	var ce *agents.ConfigError
	if !errors.As(err, &ce) || ce.File != "agents.json" || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestDemo(t *testing.T) {
	fsys, name := agents.Demo()
	m, err := agents.Load(context.Background(), fsys, name, agents.Deps{Builtins: tool.Demo()})
	if err != nil {
		t.Fatal(err)
	}
	a, ok := m.Agent("demo")
	g, gok := m.Agent("guarded")
	if !ok || !gok || len(m) != 2 {
		t.Fatalf("agents = %v, want demo and guarded", m)
	}
	if len(g.Guardrails) != 2 || g.Guardrails[0].Name != "no-door-codes" || g.Guardrails[1].Stage != "input" {
		t.Errorf("guarded's guardrails = %+v", g.Guardrails)
	}
	if a.Model == nil || a.MaxTokens != 1024 || a.System == "" {
		t.Errorf("demo agent = %+v", a)
	}
	if a.Limits.Budget != time.Minute || a.Limits.Margin != 5*time.Second || a.Limits.ApprovalTTL != 72*time.Hour || a.Limits.MaxStepsPerInvocation != 20 {
		t.Errorf("limits = %+v", a.Limits)
	}
	var names []string
	for _, s := range a.Tools.Specs() {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "get_weather,search_docs,send_email" {
		t.Errorf("tools = %v", names)
	}
	email, ok := a.Tools.Get("send_email")
	if !ok || !email.Approval(json.RawMessage(`{"to":"a@example.com","subject":"s"}`)) {
		t.Errorf("send_email does not need approval")
	}
	weather, _ := a.Tools.Get("get_weather")
	if weather.Approval(json.RawMessage(`{"city":"Lisbon"}`)) {
		t.Errorf("get_weather needs approval")
	}
	// The registry validates input against the demo schemas.
	if err := a.Tools.Check("get_weather", json.RawMessage(`{"town":"Lisbon"}`)); err == nil {
		t.Errorf("Check accepted input without a city")
	}
}

func TestFullConfig(t *testing.T) {
	d := deps(t)
	// A real Lambda client; building the tools makes no calls.
	d.Declared = agents.DeclaredTools(awslambda.Client{Client: lambda.NewFromConfig(aws.Config{Region: "us-east-1"})}, nil)
	m, err := agents.Load(context.Background(), os.DirFS("testdata"), "full.json", d)
	if err != nil {
		t.Fatal(err)
	}
	ops, ok := m.Agent("ops")
	if !ok {
		t.Fatal("no ops agent")
	}
	want := turn.Limits{Budget: 2 * time.Minute, Margin: 10 * time.Second, MaxStepsPerInvocation: 5, MaxStepsPerTurn: 30,
		LeaseGrace: 30 * time.Second, ApprovalTTL: time.Hour,
		ModelRetry: model.RetryPolicy{Attempts: 3, Backoff: time.Second, MaxBackoff: 20 * time.Second,
			WakeDelay: 3 * time.Second, MaxWakeDelay: 10 * time.Minute, Suspensions: 12}}
	if ops.Limits != want {
		t.Errorf("limits = %+v, want %+v", ops.Limits, want)
	}
	// The old throttleDelay still sets the first wake delay.
	old, err := agents.Parse("old.json", []byte(`{"agents":{"a":{"provider":"scripted","script":`+inlineScript+`,"limits":{"throttleDelay":"7s"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := agents.Build(context.Background(), fstest.MapFS{}, "old.json", old, agents.Deps{}); err != nil {
		t.Fatal(err)
	} else if a, _ := m.Agent("a"); a.Limits.ModelRetry.WakeDelay != 7*time.Second {
		t.Errorf("throttleDelay 7s gave wakeDelay %v", a.Limits.ModelRetry.WakeDelay)
	}
	if ops.MaxTokens != 2048 || ops.MaxToolOutput != 4096 || ops.System != "You run operations." {
		t.Errorf("ops = %+v", ops)
	}
	// Approvals override the built-in's own policy.
	email, _ := ops.Tools.Get("send_email")
	if email.Approval(json.RawMessage(`{"to":"x","subject":"y"}`)) {
		t.Errorf(`send_email with "never" needs approval`)
	}
	read, _ := ops.Tools.Get("read_file")
	if read.Effect != tool.Read || !read.Idempotent || read.Description != "Read a file on the ops host." {
		t.Errorf("read_file = %+v", read)
	}
	if !read.Approval(json.RawMessage(`{"path":"/etc/shadow"}`)) || read.Approval(json.RawMessage(`{"path":"/tmp/log"}`)) {
		t.Errorf("read_file's own approval rule is not applied")
	}
	refund, _ := ops.Tools.Get("refund")
	if refund.Effect != tool.External || !refund.SideEffect() {
		t.Errorf("refund = %+v", refund)
	}
	if !refund.Approval(json.RawMessage(`{"amount":250}`)) || refund.Approval(json.RawMessage(`{"amount":20}`)) {
		t.Errorf("refund's approvals rule is not applied")
	}
	if err := ops.Tools.Check("read_file", json.RawMessage(`{"path":"/tmp/log","mode":"rw"}`)); err == nil {
		t.Errorf("Check accepted a property the declared schema forbids")
	}
	chat, ok := m.Agent("chat")
	if !ok || chat.Model == nil || len(chat.Tools.Specs()) != 0 {
		t.Errorf("chat = %+v", chat)
	}
}

// TestApprovalsThroughBuild checks that approvals reach the built tools.
func TestApprovalsThroughBuild(t *testing.T) {
	noop := func(context.Context, tool.Call) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }
	d := deps(t)
	d.Builtins = []tool.Tool{
		{Name: "write_file", Schema: json.RawMessage(`{"type":"object"}`), Effect: tool.Write, Run: noop},
		{Name: "pay", Schema: json.RawMessage(`{"type":"object"}`), Effect: tool.External, Run: noop, NeedsApproval: tool.Always},
	}
	cfg := scripted(`"tools":["write_file","pay"],"approvals":{
		"write_file":{"pathPrefix":{"field":"path","prefix":"/etc"}},
		"pay":{"over":{"field":"amount","limit":100}}}`)
	m, err := agents.Load(context.Background(), fstest.MapFS{"agents.json": &fstest.MapFile{Data: []byte(cfg)}}, "agents.json", d)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Agent("a")
	wf, _ := a.Tools.Get("write_file")
	pay, _ := a.Tools.Get("pay")
	for _, c := range []struct {
		t     tool.Tool
		input string
		want  bool
	}{
		{wf, `{"path":"/etc/passwd"}`, true},
		{wf, `{"path":"/tmp/x"}`, false},
		{wf, `{"path":"/tmp/../etc/x"}`, true},
		{wf, `{"path":`, true},
		{pay, `{"amount":150}`, true},
		{pay, `{"amount":50}`, false},    // the rule replaces the tool's own Always
		{pay, `{"amount":"lots"}`, true}, // not a number: fails closed
		{pay, `nope`, true},
	} {
		if got := c.t.Approval(json.RawMessage(c.input)); got != c.want {
			t.Errorf("%s(%s) needs approval = %v, want %v", c.t.Name, c.input, got, c.want)
		}
	}
}
