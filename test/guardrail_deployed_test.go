package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/test/harness"
)

// moderator is an outside HTTP checker for the deployed guardrail test:
// it escalates any text that asks for a refund, and counts its checks.
type moderator struct {
	srv    *httptest.Server
	mu     sync.Mutex
	checks []string
}

func newModerator(t *testing.T) *moderator {
	m := &moderator{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Guardrail, Stage, Text string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		m.checks = append(m.checks, in.Guardrail+":"+in.Stage+":"+in.Text)
		m.mu.Unlock()
		if strings.Contains(in.Text, "refund") {
			fmt.Fprint(w, `{"action":"escalate","reason":"refunds need a person"}`)
			return
		}
		fmt.Fprint(w, `{"action":"allow"}`)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// guardAgents writes an agent file whose agent desk has an HTTP checker at
// input (the moderator) and an output pattern that blocks an account
// number.
func guardAgents(t *testing.T, url string) string {
	t.Helper()
	dir := t.TempDir()
	agents := fmt.Sprintf(`{"agents":{"desk":{"provider":"scripted","system":"You help.",
	 "script":{"steps":[{"delay":"20ms","text":"Your account is AC-1234-5678."}]},
	 "guardrails":[
	  {"name":"moderation","stage":"input","url":%q,"timeout":"2s"},
	  {"name":"accounts","stage":"output","patterns":["AC-\\d{4}-\\d{4}"],"reason":"Account numbers are not shown here."}],
	 "limits":{"budget":"1500ms","margin":"300ms","leaseGrace":"200ms","maxStepsPerInvocation":20,"maxStepsPerTurn":100}}}}`, url)
	p := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(p, []byte(agents), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDeployedGuardrails: through the real bootstraps behind the modelled
// front door, an agent file's HTTP checker escalates a message; the turn
// waits for an approval an operator gives through the door; the model's
// answer then trips the output pattern, which blocks it: the stream
// shows the reason and never the account number, and every decision is a
// fact.
func TestDeployedGuardrails(t *testing.T) {
	t.Parallel()
	kumo(t)
	mod := newModerator(t)
	d := harness.StartDeployed(t, frontLimits(), harness.WithAgents(guardAgents(t, mod.srv.URL)))
	var s struct{ ID string }
	if r := call(t, d, "POST", "/sessions", d.Token(alice), `{"agent":"desk"}`, nil); r.code != http.StatusCreated || json.Unmarshal(r.body, &s) != nil {
		t.Fatalf("create: %v", r)
	}
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/messages", d.Token(alice), `{"text":"I want a refund"}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("post: %v", r)
	}
	var ap reducer.Approval
	deadline := time.Now().Add(30 * time.Second)
	for ap.ID == "" && time.Now().Before(deadline) {
		if sess, err := d.Store.Load(t.Context(), s.ID); err == nil && sess.State.Status == reducer.Suspended && len(sess.State.Turn.Pending) == 1 {
			ap = sess.State.Turn.Pending[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ap.Tool != "guardrail:moderation" {
		t.Fatalf("pending approval %+v, want the moderation guardrail's", ap)
	}
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/approvals/"+ap.ID, d.Token(bob), `{"decision":"approve"}`, nil); r.code != http.StatusNotFound {
		t.Fatalf("another caller's approval: %v, want 404", r)
	}
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/approvals/"+ap.ID, d.Token(alice), `{"decision":"approve"}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("approve: %v", r)
	}
	waitIdle(t, d, s.ID)
	facts, err := d.Store.Facts(t.Context(), s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range facts {
		if f.Type == reducer.GuardDecided {
			got = append(got, f.Guard.Guardrail+":"+string(f.Guard.Action))
		}
	}
	if strings.Join(got, ",") != "moderation:escalate,accounts:block" || facts[len(facts)-1].Type != reducer.TurnCompleted {
		t.Fatalf("decisions %v, last %s; want the escalation, then the output block, and a completed turn", got, facts[len(facts)-1].Type)
	}
	mod.mu.Lock()
	checks := len(mod.checks)
	mod.mu.Unlock()
	if checks != 1 {
		t.Fatalf("the moderator was asked %d times, want once (the approval is not checked again)", checks)
	}
	r := call(t, d, "GET", "/sessions/"+s.ID+"/turns/"+facts[len(facts)-1].Turn+"/stream", d.Token(alice), "", nil)
	if r.code != http.StatusOK || strings.Contains(string(r.body), "1234-5678") || !strings.Contains(string(r.body), "Account numbers are not shown here.") {
		t.Fatalf("the turn's stream: %d %.600s; want the reason and no account number", r.code, r.body)
	}
}
