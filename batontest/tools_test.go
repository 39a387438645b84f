package batontest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
)

// TestToolReadsItsCall: a tool reads its call's info from its context: the
// session, turn, step, call id, owner, its execution and attempt, the
// approver and reason of its approval, and the idempotency key, the same
// as IdempotencyKey's. A read needing no approval has no execution and no
// approval.
func TestToolReadsItsCall(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]baton.Call{}
	keys := map[string]string{}
	record := func(ctx context.Context, name string) {
		c, ok := baton.CallOf(ctx)
		if !ok {
			t.Errorf("%s: CallOf found no call", name)
		}
		mu.Lock()
		seen[name], keys[name] = c, baton.IdempotencyKey(ctx)
		mu.Unlock()
	}
	type order struct {
		Order string `json:"order"`
	}
	refund := baton.Func("refund", "Refund an order.", func(ctx context.Context, in order) (string, error) {
		record(ctx, "refund")
		return "refunded " + in.Order, nil
	}, baton.External(), baton.NeedsApproval())
	status := baton.Func("status", "An order's status.", func(ctx context.Context, in order) (string, error) {
		record(ctx, "status")
		return "shipped", nil
	}, baton.Read())
	model := batontest.Script(t, `{"steps":[
	 {"text":"Looking.","toolCalls":[{"name":"status","input":{"order":"A-1"}}]},
	 {"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"A-1"}}]},
	 {"text":"Done."}]}`)
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "desk", Model: model, Tools: []baton.Tool{refund, status}}}})
	s := kit.Session("desk")
	s.Post("Refund A-1.")
	if out := s.Run(); out.Kind != batontest.Suspended || len(s.Pending()) != 1 {
		t.Fatalf("first run %+v, pending %+v; want suspended for refund's approval", out, s.Pending())
	}
	s.ApproveBecause(s.Pending()[0].ID, "customer called, order checked")
	out := s.Run()
	if out.Kind != batontest.Completed {
		t.Fatalf("after approval: %+v", out)
	}

	r, st := seen["refund"], seen["status"]
	if r.ID != s.Call("refund").ID || st.ID != s.Call("status").ID {
		t.Errorf("call ids %q, %q; want the stream's %q, %q", r.ID, st.ID, s.Call("refund").ID, s.Call("status").ID)
	}
	for name, c := range seen {
		if c.Session != s.ID || c.Turn != out.Turn || c.Owner != batontest.Owner || c.Name != name || c.Try != 1 {
			t.Errorf("%s: call %+v; want session %s, turn %s, owner %s, try 1", name, c, s.ID, out.Turn, batontest.Owner)
		}
		if c.IdempotencyKey == "" || c.IdempotencyKey != keys[name] {
			t.Errorf("%s: key %q, IdempotencyKey %q; want the same, set", name, c.IdempotencyKey, keys[name])
		}
	}
	if st.Step != 1 || r.Step != 2 {
		t.Errorf("steps: status %d, refund %d; want 1 and 2", st.Step, r.Step)
	}
	if r.Execution == "" || r.Attempt != 1 || st.Execution != "" || st.Attempt != 0 {
		t.Errorf("executions: refund %q attempt %d, status %q attempt %d; want refund's ledger record, attempt 1, none for the read",
			r.Execution, r.Attempt, st.Execution, st.Attempt)
	}
	if a := r.Approval; a == nil || a.Approver != "approver" || a.Reason != "customer called, order checked" || a.ID == "" {
		t.Errorf("refund's approval %+v; want approver and reason", a)
	}
	if st.Approval != nil {
		t.Errorf("status needed no approval, got %+v", st.Approval)
	}
}

// TestTypedToolErrors: each typed tool error's outcome. A ForModel error is
// the call's result and the turn goes on; a Transient one is retried by
// the tool's policy, then the model sees it; a try cut by the tool's
// Timeout tells the model it timed out; a Fatal one fails the turn, kind
// tool, with its message.
func TestTypedToolErrors(t *testing.T) {
	type empty struct{}
	var mu sync.Mutex
	tries := 0
	lookup := baton.Func("lookup", "Look up.", func(context.Context, empty) (string, error) {
		return "", baton.ForModel(errors.New("no such order; ask for its number"))
	}, baton.Read())
	flaky := baton.Func("flaky", "Always busy.", func(context.Context, empty) (string, error) {
		mu.Lock()
		tries++
		mu.Unlock()
		return "", baton.Transient(errors.New("the warehouse is busy"))
	}, baton.Read(), baton.Retry(3, time.Millisecond, time.Millisecond))
	slow := baton.Func("slow", "Never answers.", func(ctx context.Context, _ empty) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}, baton.Write(), baton.Timeout(20*time.Millisecond))
	boom := baton.Func("boom", "Breaks.", func(context.Context, empty) (string, error) {
		return "", baton.Fatal(errors.New("the ledger database is gone"))
	}, baton.Write())
	model := batontest.Script(t, `{"steps":[
	 {"text":"Trying.","toolCalls":[{"name":"lookup","input":{}},{"name":"flaky","input":{}},{"name":"slow","input":{}}]},
	 {"text":"Again.","toolCalls":[{"name":"boom","input":{}}]},
	 {"text":"Never reached."}]}`)
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "ops", Model: model,
		Tools: []baton.Tool{lookup, flaky, slow, boom}}}})
	s := kit.Session("ops")
	s.Post("Go.")
	out := s.Run()

	if c := s.Call("lookup"); c.Error != "no such order; ask for its number" {
		t.Errorf("lookup: %s; want the ForModel message as its error result", c)
	}
	if c := s.Call("flaky"); tries != 3 || !strings.Contains(c.Error, "after 3 tries") || !strings.Contains(c.Error, "the warehouse is busy") {
		t.Errorf("flaky tried %d times, %s; want 3 tries, then the model told", tries, c)
	}
	if c := s.Call("slow"); !strings.Contains(c.Error, "timed out after 20ms") || !strings.Contains(c.Error, "unknown") {
		t.Errorf("slow: %s; want a timeout whose effect is unknown", c)
	}
	if out.Kind != batontest.Failed || out.Failure == nil || out.Failure.Kind != "tool" ||
		!strings.Contains(out.Failure.Error, "the ledger database is gone") {
		t.Fatalf("outcome %+v (failure %+v); want failed, kind tool, with boom's message", out, out.Failure)
	}
	if c := s.Call("boom"); c.Error != "the ledger database is gone" {
		t.Errorf("boom: %s; want its error as its result", c)
	}
	if strings.Contains(s.Text(), "Never reached.") {
		t.Errorf("the turn went on after a fatal error: %q", s.Text())
	}
}

// TestTransientRetryWithinTheLedger: a non-idempotent side effect that
// fails transiently before its effect is retried within its one execution:
// the ledger records one start, every try has the same idempotency key,
// and the effect happens once.
func TestTransientRetryWithinTheLedger(t *testing.T) {
	var mu sync.Mutex
	var calls []baton.Call
	effects := 0
	charge := baton.Func("charge", "Charge a card.", func(ctx context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		c, _ := baton.CallOf(ctx)
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, c)
		if len(calls) < 3 {
			return "", baton.Transient(errors.New("the gateway is busy; nothing was charged"))
		}
		effects++
		return "charged", nil
	}, baton.External(), baton.Retry(4, time.Millisecond, 2*time.Millisecond))
	model := batontest.Script(t, `{"steps":[
	 {"text":"Charging.","toolCalls":[{"name":"charge","input":{"amount":5}}]},
	 {"text":"Charged."}]}`)
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "till", Model: model, Tools: []baton.Tool{charge}}}})
	s := kit.Session("till")
	s.Post("Charge 5.")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("run %+v", out)
	}
	if effects != 1 || len(calls) != 3 {
		t.Fatalf("charge tried %d times with %d effects; want 3 tries, 1 effect", len(calls), effects)
	}
	if ex := s.Executions(); len(ex) != 1 || ex[0] != "charge" {
		t.Errorf("the ledger recorded %q; want one start of charge", ex)
	}
	for i, c := range calls {
		if c.Try != i+1 || c.IdempotencyKey != calls[0].IdempotencyKey || c.Execution != calls[0].Execution || c.Execution == "" {
			t.Errorf("try %d: %+v; want try %d of execution %s with key %s", i+1, c, i+1, calls[0].Execution, calls[0].IdempotencyKey)
		}
	}
	if c := s.Call("charge"); string(c.Output) != `"charged"` || c.Error != "" {
		t.Errorf("charge: %s", c)
	}
}

// TestTypedApprovalPredicate: a typed predicate rule on the tool's input
// suspends a call below and above a two-sided range and lets the one
// inside run; a predicate that panics fails closed and asks.
func TestTypedApprovalPredicate(t *testing.T) {
	type transfer struct {
		Amount int `json:"amount"`
	}
	ran := map[int]bool{}
	var mu sync.Mutex
	move := baton.Func("move", "Move money.", func(_ context.Context, in transfer) (string, error) {
		mu.Lock()
		ran[in.Amount] = true
		mu.Unlock()
		return "moved", nil
	}, baton.NeedsApproval(baton.When(func(in transfer) bool { return in.Amount < 10 || in.Amount > 100 })))
	odd := baton.Func("odd", "A tool whose rule panics.", func(context.Context, transfer) (string, error) {
		return "ran", nil
	}, baton.NeedsApproval(baton.When(func(in transfer) bool { panic("the rule is broken") })))
	model := batontest.Script(t, `{"steps":[
	 {"toolCalls":[{"name":"move","input":{"amount":5}},{"name":"move","input":{"amount":50}},
	  {"name":"move","input":{"amount":500}},{"name":"odd","input":{"amount":50}}]},
	 {"text":"Done."}]}`)
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "bank", Model: model, Tools: []baton.Tool{move, odd}}}})
	s := kit.Session("bank")
	s.Post("Move.")
	if out := s.Run(); out.Kind != batontest.Suspended {
		t.Fatalf("run %+v; want suspended for approvals", out)
	}
	var asked []string
	for _, p := range s.Pending() {
		asked = append(asked, p.Tool+string(p.Input))
	}
	want := []string{`move{"amount":5}`, `move{"amount":500}`, `odd{"amount":50}`}
	if strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("pending %q; want %q", asked, want)
	}
	if !ran[50] || ran[5] || ran[500] {
		t.Errorf("ran %v; want only the amount inside the range", ran)
	}
}

// TestModelSeesItsStep: each request the runner makes carries the step's
// number in the turn, and the results the model has not answered yet.
func TestModelSeesItsStep(t *testing.T) {
	echo := baton.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}, baton.Read())
	rec := batontest.Record(batontest.Script(t, `{"steps":[
	 {"toolCalls":[{"name":"echo","input":{"text":"one"}}]},
	 {"toolCalls":[{"name":"echo","input":{"text":"two"}}]},
	 {"text":"Done."}]}`))
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "e", Model: rec, Tools: []baton.Tool{echo}}}})
	s := kit.Session("e")
	s.Post("Echo twice.")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("run %+v", out)
	}
	reqs := rec.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, req := range reqs {
		if req.Step != i+1 || req.LastUserText() != "Echo twice." {
			t.Errorf("request %d: step %d, last user text %q", i, req.Step, req.LastUserText())
		}
	}
	if r := reqs[0].Results(); len(r) != 0 {
		t.Errorf("the first step has results %+v", r)
	}
	if r := reqs[2].Results(); len(r) != 1 || string(r[0].Output) != `"two"` || r[0].ToolName != "echo" {
		t.Errorf("the third step's pending results %+v, want echo's \"two\"", r)
	}
}
