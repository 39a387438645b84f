package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/tool"
)

type transfer struct {
	To     string  `json:"to" jsonschema:"the account to pay"`
	Amount float64 `json:"amount" jsonschema:"in euros"`
	Memo   string  `json:"memo,omitempty"`
}

type receipt struct {
	Paid float64 `json:"paid"`
	Key  string  `json:"key"`
}

func pay(ctx context.Context, in transfer) (receipt, error) {
	if in.To == "nobody" {
		return receipt{}, errors.New("no such account")
	}
	return receipt{Paid: in.Amount, Key: baton.IdempotencyKey(ctx)}, nil
}

func build(t *testing.T, tools ...baton.Tool) *tool.Registry {
	t.Helper()
	m, err := baton.Script([]byte(`{"steps":[{"text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.GoAgent(baton.Agent{Name: "a", Model: m, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a.Tools
}

func TestFuncDerivesTheSchemaTheModelSees(t *testing.T) {
	reg := build(t, baton.Func("pay", "Pay an account.", pay))
	specs := reg.Specs()
	if len(specs) != 1 || specs[0].Name != "pay" || specs[0].Description != "Pay an account." {
		t.Fatalf("specs = %+v", specs)
	}
	var schema struct {
		Type       string                    `json:"type"`
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
		Additional json.RawMessage           `json:"additionalProperties"`
	}
	if err := json.Unmarshal(specs[0].Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.Properties["to"]["type"] != "string" || schema.Properties["amount"]["type"] != "number" ||
		schema.Properties["to"]["description"] != "the account to pay" {
		t.Fatalf("schema = %s", specs[0].Schema)
	}
	if strings.Join(schema.Required, ",") != "to,amount" {
		t.Fatalf("required = %v, want to,amount (memo is omitempty)", schema.Required)
	}
	if string(schema.Additional) != "false" {
		t.Fatalf("additionalProperties = %s, want false", schema.Additional)
	}
}

func TestFuncInputIsValidatedBeforeTheCall(t *testing.T) {
	called := false
	reg := build(t, baton.Func("pay", "Pay.", func(ctx context.Context, in transfer) (receipt, error) {
		called = true
		return pay(ctx, in)
	}))
	for input, want := range map[string]string{
		`{"amount":5}`:                    "to: missing required property",
		`{"to":"bob","amount":"five"}`:    "amount: must be number, got string",
		`{"to":"bob","amount":5,"tip":1}`: "tip: unknown property",
		`["bob",5]`:                       "must be a JSON object",
	} {
		err := reg.Check("pay", json.RawMessage(input))
		var ie *tool.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), want) {
			t.Errorf("input %s: %v, want an InputError mentioning %q", input, err, want)
		}
	}
	if err := reg.Check("pay", json.RawMessage(`{"to":"bob","amount":5}`)); err != nil {
		t.Fatalf("valid input: %v", err)
	}
	if called {
		t.Fatal("Check ran the tool")
	}
}

func TestFuncRunsTheTypedFunction(t *testing.T) {
	p := baton.Func("pay", "Pay.", pay)
	out, err := p.Run(context.Background(), baton.Call{ID: "c1", Name: "pay", Input: json.RawMessage(`{"to":"bob","amount":12.5}`), IdempotencyKey: "s/t/c1"})
	if err != nil || string(out) != `{"paid":12.5,"key":"s/t/c1"}` {
		t.Fatalf("out = %s, %v", out, err)
	}
	// The function's error is the model's to see.
	if _, err := p.Run(context.Background(), baton.Call{Input: json.RawMessage(`{"to":"nobody","amount":1}`)}); err == nil || err.Error() != "no such account" {
		t.Fatalf("error = %v", err)
	}
}

func TestFuncOptions(t *testing.T) {
	def := baton.Func("pay", "Pay.", pay)
	if def.Effect != tool.Write || def.Idempotent || def.Approval(json.RawMessage(`{"amount":1e9}`)) || !def.SideEffect() {
		t.Fatalf("default tool = %+v: want a write side effect, not idempotent, no approval", def)
	}
	for name, c := range map[string]struct {
		t          baton.Tool
		effect     tool.Effect
		idempotent bool
	}{
		"read":                {baton.Func("pay", "", pay, baton.Read()), tool.Read, false},
		"external idempotent": {baton.Func("pay", "", pay, baton.External(), baton.Idempotent()), tool.External, true},
		"write":               {baton.Func("pay", "", pay, baton.Read(), baton.Write()), tool.Write, false},
	} {
		if c.t.Effect != c.effect || c.t.Idempotent != c.idempotent {
			t.Errorf("%s: effect %s idempotent %v, want %s %v", name, c.t.Effect, c.t.Idempotent, c.effect, c.idempotent)
		}
	}

	over := baton.Func("pay", "", pay, baton.External(), baton.NeedsApproval(baton.Over("amount", 100), baton.PathPrefix("to", "/vip")))
	for input, want := range map[string]bool{
		`{"to":"/std/bob","amount":100}`:    false, // at the threshold, not over it
		`{"to":"/std/bob","amount":100.01}`: true,
		`{"to":"bob","amount":1}`:           true, // a relative path against an absolute prefix asks
		`{"to":"/vip/ann","amount":1}`:      true,
		`not json`:                          true, // unreadable input asks
	} {
		if got := over.Approval(json.RawMessage(input)); got != want {
			t.Errorf("approval for %s = %v, want %v", input, got, want)
		}
	}
	if always := baton.Func("pay", "", pay, baton.NeedsApproval()); !always.Approval(json.RawMessage(`{}`)) {
		t.Fatal("NeedsApproval() does not ask")
	}
	if never := baton.Func("pay", "", pay, baton.NeedsApproval(baton.Never())); never.Approval(json.RawMessage(`{}`)) {
		t.Fatal("NeedsApproval(Never()) asks")
	}
}

func TestFuncThatCannotBeMadeDoesNotBuild(t *testing.T) {
	m, _ := baton.Script([]byte(`{"steps":[{"text":"hi"}]}`))
	for name, c := range map[string]struct {
		t    baton.Tool
		want string
	}{
		"input not an object": {baton.Func("echo", "", func(_ context.Context, s string) (string, error) { return s, nil }), `want a struct or map`},
		"input has no schema": {baton.Func("ch", "", func(_ context.Context, in struct{ C chan int }) (int, error) { return 0, nil }), "input schema"},
		"rule on no field":    {baton.Func("pay", "", pay, baton.NeedsApproval(baton.Over("", 5))), "over needs a field"},
	} {
		if c.t.Err == nil {
			t.Errorf("%s: no Err", name)
		}
		_, err := app.GoAgent(baton.Agent{Name: "a", Model: m, Tools: []baton.Tool{c.t}}, nil)
		var ae *baton.AgentError
		if !errors.As(err, &ae) || ae.Field != "tools[0]" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Build = %v, want an AgentError on tools[0] mentioning %q", name, err, c.want)
		}
		// A registry refuses it too, so a JSON agent naming it fails alike.
		if _, err := tool.NewRegistry(c.t); err == nil {
			t.Errorf("%s: NewRegistry accepted it", name)
		}
	}
}

func TestAgentBuildNamesEveryProblem(t *testing.T) {
	m, _ := baton.Script([]byte(`{"steps":[{"text":"hi"}]}`))
	p := baton.Func("pay", "", pay)
	_, err := app.GoAgent(baton.Agent{
		Model:     nil,
		Tools:     []baton.Tool{p, p},
		Approvals: map[string]baton.Rule{"refund": baton.Always(), "pay": {}},
		Limits:    baton.Limits{Budget: 5e9, Margin: 10e9},
	}, nil)
	got := map[string]bool{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ae *baton.AgentError
		if errors.As(e, &ae) {
			got[ae.Field] = true
		}
	}
	for _, f := range []string{"name", "model", "tools[1]", "approvals.refund", "approvals.pay", "limits.margin"} {
		if !got[f] {
			t.Errorf("no error on %s in %v", f, err)
		}
	}
	if _, err := app.GoAgent(baton.Agent{Name: "ok", Model: m, Tools: []baton.Tool{p}}, nil); err != nil {
		t.Fatal(fmt.Errorf("a good agent: %w", err))
	}
}

// A negative retry policy or timeout is refused: the tool does not build.
func TestRetryPolicyMustNotBeNegative(t *testing.T) {
	bad := baton.Func("t", "d", func(context.Context, struct{}) (string, error) { return "", nil }, baton.Retry(-1, 0, 0))
	if bad.Err == nil {
		t.Fatal("a negative retry policy was accepted")
	}
	if neg := baton.Func("t", "d", func(context.Context, struct{}) (string, error) { return "", nil }, baton.Timeout(-time.Second)); neg.Err == nil {
		t.Fatal("a negative timeout was accepted")
	}
	good := baton.Func("t", "d", func(context.Context, struct{}) (string, error) { return "", nil }, baton.Retry(3, time.Millisecond, time.Second))
	if good.Err != nil || good.Retry.Attempts != 3 {
		t.Fatalf("retry policy: %+v, %v", good.Retry, good.Err)
	}
}
