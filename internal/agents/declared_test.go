package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/tool/remote"
	"github.com/baton-run/baton/providers/awslambda"
	"github.com/baton-run/baton/test/harness"
)

// load builds cfg's agent "a" with declared and returns its tools.
func load(t *testing.T, cfg string, declared func(agents.Decl) (tool.Tool, error)) *tools {
	t.Helper()
	d := deps(t)
	d.Declared = declared
	m, err := agents.Load(context.Background(), fstest.MapFS{"agents.json": &fstest.MapFile{Data: []byte(cfg)}}, "agents.json", d)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := m.Agent("a")
	if !ok {
		t.Fatal("no agent a")
	}
	return &tools{a.Tools}
}

type tools struct{ tools *tool.Registry }

func (a *tools) get(t *testing.T, name string) tool.Tool {
	t.Helper()
	tl, ok := a.tools.Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl
}

func TestDeclaredHTTPTool(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []*http.Request
		body []map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env map[string]any
		err := json.NewDecoder(r.Body).Decode(&env)
		mu.Lock()
		seen, body = append(seen, r), append(body, env)
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		in, _ := env["input"].(map[string]any)
		if in["sku"] == "missing" {
			http.Error(w, "no such sku", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"sku": in["sku"], "price": 42})
	}))
	t.Cleanup(srv.Close)

	cfg := scripted(fmt.Sprintf(`"tools":["get_weather",{
		"name":"price","kind":"http","description":"Price of a SKU.","effect":"read","idempotent":true,
		"schema":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"}},"required":["sku"],"additionalProperties":false},
		"url":%q,"timeout":"2s","approval":{"over":{"field":"qty","limit":10}}}]`, srv.URL+"/price"))
	a := load(t, cfg, agents.DeclaredTools(nil, srv.Client()))

	// Specs show the declared tool to the model, in config order.
	specs := a.tools.Specs()
	if len(specs) != 2 || specs[1].Name != "price" || specs[1].Description != "Price of a SKU." || !strings.Contains(string(specs[1].Schema), `"sku"`) {
		t.Fatalf("specs = %+v", specs)
	}
	price := a.get(t, "price")
	if price.Effect != tool.Read || !price.Idempotent {
		t.Errorf("price = %+v", price)
	}
	if !price.Approval(json.RawMessage(`{"sku":"a","qty":11}`)) || price.Approval(json.RawMessage(`{"sku":"a","qty":2}`)) {
		t.Errorf("the declaration's approval rule is not applied")
	}

	// The registry checks input against the declared schema.
	var ie *tool.InputError
	if err := a.tools.Check("price", json.RawMessage(`{"qty":"two"}`)); !errors.As(err, &ie) ||
		strings.Join(ie.Problems, "; ") != "qty: must be integer, got string; sku: missing required property" {
		t.Errorf("Check = %v", err)
	}
	if err := a.tools.Check("price", json.RawMessage(`{"sku":"a-1","qty":3}`)); err != nil {
		t.Errorf("Check = %v", err)
	}

	c := tool.Call{ID: "call_7", Name: "price", Input: json.RawMessage(`{"sku":"a-1"}`), IdempotencyKey: "s/t/call_7"}
	out, err := price.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "{\"price\":42,\"sku\":\"a-1\"}\n" {
		t.Errorf("output = %q", out)
	}
	mu.Lock()
	r, env := seen[0], body[0]
	mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/price" || r.Header.Get("Idempotency-Key") != c.IdempotencyKey || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s headers %v", r.Method, r.URL.Path, r.Header)
	}
	if env["toolCallId"] != c.ID || env["idempotencyKey"] != c.IdempotencyKey {
		t.Errorf("envelope = %v", env)
	}

	_, err = price.Run(context.Background(), tool.Call{ID: "call_8", Input: json.RawMessage(`{"sku":"missing"}`), IdempotencyKey: "k"})
	var se *remote.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusNotFound || !strings.Contains(err.Error(), "no such sku") {
		t.Errorf("err = %v, want a 404 StatusError", err)
	}
}

// deadlineTransport answers every request at once with the time left to
// its context's deadline, so a test can see the timeout a tool applies.
type deadlineTransport struct{}

func (deadlineTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	left := "none"
	if dl, ok := r.Context().Deadline(); ok {
		left = time.Until(dl).Round(time.Second).String()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"left":"` + left + `"}`)), Request: r}, nil
}

func TestDeclaredTimeout(t *testing.T) {
	client := &http.Client{Transport: deadlineTransport{}}
	for _, tc := range []struct{ timeout, want string }{
		{"", "30s"},
		{`"timeout":"7s",`, "7s"},
	} {
		cfg := scripted(`"tools":[{"name":"t","kind":"http","description":"d","effect":"read","schema":{"type":"object"},` + tc.timeout + `"url":"https://tools.example.com/t"}]`)
		a := load(t, cfg, agents.DeclaredTools(nil, client))
		out, err := a.get(t, "t").Run(context.Background(), tool.Call{ID: "c", Input: json.RawMessage(`{}`), IdempotencyKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"left":"` + tc.want + `"}`; string(out) != want {
			t.Errorf("timeout %q: output %s, want %s", tc.timeout, out, want)
		}
	}

	// A declared timeout that elapses is the model's error, not a hang.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(slow.Close)
	cfg := scripted(fmt.Sprintf(`"tools":[{"name":"t","kind":"http","description":"d","effect":"read","schema":{"type":"object"},"timeout":"100ms","url":%q}]`, slow.URL))
	a := load(t, cfg, agents.DeclaredTools(nil, slow.Client()))
	_, err := a.get(t, "t").Run(context.Background(), tool.Call{ID: "c", Input: json.RawMessage(`{}`), IdempotencyKey: "k"})
	if err == nil || !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Errorf("err = %v", err)
	}
}

// TestDeclaredLambdaTool checks the wiring of a lambda declaration to kumo:
// the tool invokes the configured ARN (here one kumo does not know).
// LambdaTool itself is tested against a running function in package
// providers/awslambda.
func TestDeclaredLambdaTool(t *testing.T) {
	emu := testenv.Emulator()
	arn := "arn:aws:lambda:us-east-1:000000000000:function:not-deployed"
	cfg := scripted(`"tools":[{"name":"refund","kind":"lambda","description":"Refund.","effect":"external","schema":{"type":"object"},"arn":"` + arn + `"}]`)
	a := load(t, cfg, agents.DeclaredTools(awslambda.Client{Client: harness.LambdaClient(emu.URL)}, nil))
	refund := a.get(t, "refund")
	if refund.Effect != tool.External || refund.Idempotent {
		t.Errorf("refund = %+v", refund)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := refund.Run(ctx, tool.Call{ID: "c", Input: json.RawMessage(`{}`), IdempotencyKey: "k"})
	var nf *lambdatypes.ResourceNotFoundException
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "not-deployed") {
		t.Errorf("err = %v, want kumo's ResourceNotFoundException for the ARN", err)
	}
}

// TestDeclaredLambdaToolNoInvoker: in a program that registered no Lambda
// invoker (the operator and the tick register none), an agent with a
// lambda tool still loads, and a call of that tool fails the turn
// (tool.Fatal) naming what to register.
func TestDeclaredLambdaToolNoInvoker(t *testing.T) {
	cfg := scripted(`"tools":[{"name":"refund","kind":"lambda","description":"Refund.","effect":"external","schema":{"type":"object"},"arn":"arn:aws:lambda:us-east-1:000000000000:function:refund"}]`)
	a := load(t, cfg, agents.DeclaredTools(nil, nil))
	_, err := a.get(t, "refund").Run(context.Background(), tool.Call{ID: "c", Input: json.RawMessage(`{}`), IdempotencyKey: "k"})
	if !errors.Is(err, remote.ErrNoLambdaInvoker) || tool.KindOf(err) != tool.Fatal {
		t.Fatalf("err = %v (%v), want a fatal remote.ErrNoLambdaInvoker", err, tool.KindOf(err))
	}
}

// TestToolPolicy: an agent file sets a tool's timeout and retry policy, as
// baton.Timeout and baton.Retry do for a Go tool: a named tool with an
// object entry, a declared tool with its own members. The declared HTTP
// tool's 503 is transient, so the call is tried again, with the same
// Idempotency-Key, and succeeds.
func TestToolPolicy(t *testing.T) {
	var (
		mu   sync.Mutex
		keys []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		if n == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{"reserved":true}`)
	}))
	t.Cleanup(srv.Close)
	cfg := scripted(`"tools":[
		{"name":"get_weather","timeout":"5s","retry":{"attempts":3,"backoff":"100ms","maxBackoff":"1s"}},
		{"name":"reserve","kind":"http","description":"Reserve.","effect":"write","schema":{"type":"object"},
		 "url":"` + srv.URL + `","timeout":"10s","retry":{"attempts":2,"backoff":"1ms"}}]`)
	a := load(t, cfg, agents.DeclaredTools(nil, nil))

	w := a.get(t, "get_weather")
	if w.Timeout != 5*time.Second || w.Retry != (tool.Retry{Attempts: 3, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}) {
		t.Errorf("get_weather: timeout %v, retry %+v", w.Timeout, w.Retry)
	}
	r := a.get(t, "reserve")
	if r.Timeout != 10*time.Second || r.Retry != (tool.Retry{Attempts: 2, Backoff: time.Millisecond}) {
		t.Errorf("reserve: timeout %v, retry %+v", r.Timeout, r.Retry)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := tool.Invoke(ctx, r, tool.Call{ID: "c", Name: "reserve", Input: json.RawMessage(`{}`), IdempotencyKey: "s/t/c"})
	if err != nil || string(out) != `{"reserved":true}` {
		t.Fatalf("Invoke = %s, %v; want the second try's answer", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] != "s/t/c" || keys[1] != "s/t/c" {
		t.Errorf("the endpoint saw keys %q, want the same key twice", keys)
	}
}
