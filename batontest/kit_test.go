package batontest_test

import (
	"context"
	"sync"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
)

// TestKillMidSideEffectThenVerdict: an invocation killed while a write tool
// runs leaves its execution uncertain; the next invocation waits for a
// verdict instead of running it again, and a rerun runs it with the same
// idempotency key.
func TestKillMidSideEffectThenVerdict(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	started := make(chan struct{})
	charge := baton.Func("charge", "Charge a card.", func(ctx context.Context, in struct {
		Amount float64 `json:"amount"`
	}) (string, error) {
		mu.Lock()
		keys = append(keys, baton.IdempotencyKey(ctx))
		first := len(keys) == 1
		mu.Unlock()
		if first {
			close(started)
			<-ctx.Done() // the process dies here
			return "", ctx.Err()
		}
		return "charged", nil
	})
	model, err := baton.Script([]byte(`{"steps":[
	 {"text":"Charging.","toolCalls":[{"name":"charge","input":{"amount":5}}]},
	 {"text":"Charged."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "till", Model: model, Tools: []baton.Tool{charge}}}})
	s := kit.Session("till")
	s.Post("Charge 5.")
	s.RunKilled(started)
	if st := s.Status(); st != batontest.StatusRunning {
		t.Fatalf("after the kill the session is %s, want still running", st)
	}

	out := s.Run()
	ex := s.Uncertain()
	if out.Kind != batontest.Suspended || ex == nil || ex.Tool != "charge" {
		t.Fatalf("resume = %+v, uncertain %+v; want suspended for a verdict on charge", out, ex)
	}
	if n := len(keys); n != 1 {
		t.Fatalf("charge ran %d times before a verdict, want 1", n)
	}
	if out := s.Run(); out.Kind != "" {
		t.Fatalf("a run before the verdict did %+v, want nothing", out)
	}

	s.Verdict(ex.ID, batontest.Rerun)
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("after rerun: %+v", out)
	}
	if len(keys) != 2 || keys[0] != keys[1] || keys[0] == "" {
		t.Fatalf("idempotency keys %q, want the same key twice", keys)
	}
	if c := s.Call("charge"); string(c.Output) != `"charged"` {
		t.Fatalf("charge call %s", c)
	}
	if got := s.Text(); got != "Charging.Charged." {
		t.Fatalf("text %q", got)
	}
}

// TestDenyAndExpiry: a denial reaches the model as a denied call; an
// approval nobody answers expires when the tick runs after its TTL.
func TestDenyAndExpiry(t *testing.T) {
	send := baton.Func("send", "Send a note.", func(context.Context, struct {
		To string `json:"to"`
	}) (string, error) {
		return "sent", nil
	}, baton.External(), baton.NeedsApproval())
	model, err := baton.Script([]byte(`{"steps":[
	 {"text":"Sending.","toolCalls":[{"name":"send","input":{"to":"ops"}}]},
	 {"text":"Not sent."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "a", Model: model, Tools: []baton.Tool{send}}}})

	s := kit.Session("a")
	s.Post("Send it.")
	s.Run()
	s.Deny(s.Pending()[0].ID, "not today")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("after deny: %+v", out)
	}
	if c := s.Call("send"); !c.Denied || c.Output != nil {
		t.Fatalf("send call %s, want denied", c)
	}
	if len(s.Executions()) != 0 {
		t.Fatal("a denied call went through the ledger")
	}

	late := kit.Session("a")
	late.Post("Send it.")
	late.Run()
	kit.Skip(baton.Limits{}.WithDefaults().ApprovalTTL + 1)
	if rep := kit.Tick(); rep.Expired != 1 {
		t.Fatalf("tick %+v, want one expired approval", rep)
	}
	if out := late.Run(); out.Kind != batontest.Completed || !late.Call("send").Denied {
		t.Fatalf("after expiry: %+v, %s", out, late.Call("send"))
	}
}
