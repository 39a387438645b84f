package test

// The cancel cascade across a SIGKILL: the operator process cancelling a
// parent dies as the write of the parent's turn.cancelled returns, before
// it cancelled the parent's child.
//
//	go test ./test/ -run CascadeAfterSIGKILL -v

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// writeCascadeAgents writes an agent file whose "boss" asks one "asker",
// which calls a write tool on ts that always needs an approval.
func writeCascadeAgents(t *testing.T, ts *toolServer) string {
	t.Helper()
	dir := t.TempDir()
	boss := `{"steps":[{"text":"Asking.","toolCalls":[{"name":"asker","input":{"task":"write w"}}]},{"text":"Done."}]}`
	asker := `{"steps":[{"text":"Writing.","toolCalls":[{"name":"upsert","input":{"ref":"w"}}]},{"text":"Wrote."}]}`
	for name, body := range map[string]string{"boss.script.json": boss, "asker.script.json": asker} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	schema := json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`)
	f := agents.File{Agents: map[string]agents.Config{
		"boss": {Provider: "scripted", Script: json.RawMessage(`"boss.script.json"`), System: "You ask.", Agents: []string{"asker"}},
		"asker": {Provider: "scripted", Script: json.RawMessage(`"asker.script.json"`), System: "You write once.",
			Tools: []agents.ToolRef{{Name: "upsert", Decl: &agents.Decl{Name: "upsert", Kind: "http", Description: "Write.",
				Schema: schema, Effect: "write", URL: ts.url("upsert"), Timeout: "5s", Approval: &agents.Rule{Always: true}}}}},
	}}
	return writeAgentsFile(t, dir, f)
}

// TestChildCancelCascadeAfterSIGKILL: a parent's child waits for the
// approval of its write. The operator process cancelling the parent is
// SIGKILLed as the write of the parent's turn.cancelled returns: the
// cancel is durable, the child not yet cancelled, and no wake was sent.
// The tick finds the parent due for the cascade and re-sends its wake; the
// resume function cancels the child, for a reason naming the parent. The
// child's approval is then refused, and its write never runs.
func TestChildCancelCascadeAfterSIGKILL(t *testing.T) {
	t.Parallel()
	ts := newToolServer(t)
	ts.begin(0, "", 0)
	s := newStack(t, stackConfig{agents: writeCascadeAgents(t, ts), count: true})
	id := s.createSession(alice, "boss")
	s.post(alice, id, "Ask.")
	var kid string
	s.waitFacts(id, "the child's request shown to the parent", 30*time.Second, func(fs []reducer.Fact) bool {
		if st := ofType(fs, reducer.ChildStarted); len(st) > 0 {
			kid = st[0].Child.ID
		}
		return len(ofType(fs, reducer.ChildApproval)) == 1 && fs[len(fs)-1].Type == reducer.TurnSuspended
	})
	pend := s.waitPending(alice, kid, 30*time.Second)

	var once sync.Once
	killed := make(chan struct{})
	s.proxies["operator"].SetHook(func(r *http.Request, body []byte, resp *http.Response) {
		if awsenv.Operation(r) == "dynamodb:TransactWriteItems" && resp.StatusCode == http.StatusOK &&
			bytes.Contains(body, []byte(reducer.TurnCancelled)) && bytes.Contains(body, []byte(id)) {
			once.Do(func() {
				if err := s.operator.Kill(); err != nil {
					t.Error(err)
				}
				close(killed)
			})
		}
	})
	// The cancel's caller waits for the dead invocation until its timeout:
	// let it, and go on.
	token := bearer(t, alice)
	go func() {
		req, err := s.api.NewRequest(s.ctx, "POST", "/sessions/"+id+"/cancel", strings.NewReader(`{"reason":"no longer needed"}`))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-killed:
	case <-s.ctx.Done():
		t.Fatal("the operator was never killed: no write of the parent's turn.cancelled went through it")
	}
	s.proxies["operator"].SetHook(nil)

	facts, err := s.store.Facts(s.ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := facts[len(facts)-1]; last.Type != reducer.TurnCancelled {
		t.Fatalf("the parent's last fact after the kill: %s, want turn.cancelled", summary(facts))
	}
	if sess, err := s.store.Load(s.ctx, kid); err != nil || sess.State.Status != reducer.Suspended {
		t.Fatalf("the child after the kill: %v, %v; want it still waiting for its approval", sess, err)
	}

	// The tick re-sends the parent's lost wake once its grace has passed;
	// the wake's invocation cancels the child.
	deadline := time.Now().Add(time.Minute)
	var lastTick time.Time
	for {
		sess, err := s.store.Load(s.ctx, kid)
		if err != nil {
			t.Fatal(err)
		}
		if sess.State.Turn == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child still %s a minute after the kill", sess.State.Status)
		}
		if time.Since(facts[len(facts)-1].Time) > wakeGrace && time.Since(lastTick) > 500*time.Millisecond {
			s.fireTick()
			lastTick = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	cf, err := s.store.Facts(s.ctx, kid, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := ofType(cf, reducer.TurnCancelled)
	if len(c) != 1 || c[0].Actor != session.ParentActor || !strings.Contains(c[0].Reason, id) {
		t.Fatalf("the child's end: %s; want one turn.cancelled by its parent's cascade, naming %s", summary(cf), id)
	}
	pf := s.waitFacts(id, "the parent's child.cancelled", 30*time.Second, func(fs []reducer.Fact) bool {
		return len(ofType(fs, reducer.ChildCancelled)) > 0
	})
	if n := len(ofType(pf, reducer.ChildCancelled)); n != 1 {
		t.Fatalf("%d child.cancelled in the parent, want 1: %s", n, summary(pf))
	}
	for _, on := range []string{kid, id} {
		err := s.store.Answer(s.ctx, on, reducer.Actor{Kind: reducer.ActorOperator, ID: alice}, reducer.Answer{ApprovalID: pend.ApprovalID, Decision: reducer.Approve, Reason: ""})
		if !errors.Is(err, session.ErrNotPending) {
			t.Fatalf("approving the cancelled child's write on %s: %v, want not pending", on, err)
		}
	}
	if calls := ts.snapshot(); len(calls) != 0 {
		t.Fatalf("the tool server saw %d calls, want none: the child's write never ran", len(calls))
	}
}
