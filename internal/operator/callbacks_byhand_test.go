package operator_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// suspendForCallback makes the running turn's tool call hand out a
// callback of policy p, as the runner does, and suspend for it. It
// returns the call's id and the token.
func (e *env) suspendForCallback(id, turn string, p callback.Policy) (call, token string) {
	e.t.Helper()
	call = ids.New("call")
	token, tok := callback.Mint(id, turn)
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	e.append(id,
		reducer.Fact{Type: reducer.ExecutionStarted, Actor: agent, Turn: turn,
			Execution: &reducer.Execution{ID: reducer.ExecutionID(call, 1), ToolCallID: call, Tool: "start_build"}},
		reducer.Fact{Type: reducer.CallbackOpened, Actor: agent, Turn: turn,
			Callback: &callback.Callback{ToolCallID: call, Tool: "start_build", Attempt: 1, Hash: tok.Hash, Policy: p}},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseCallback},
	)
	return call, token
}

// TestCompleteCallByHandRoute: the session's owner sees the call that
// waits for its callback (never its token) and completes it by its tool
// call id, with no token: callback.ended is the operator's, with the
// reason, and the turn is woken. Another caller's session is not found;
// an unknown call, a bad result, a second completion (by hand or by the
// token) and a session with no open turn are refused, writing nothing.
func TestCompleteCallByHandRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice, bob := ids.New("alice"), ids.New("bob")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	call, token := e.suspendForCallback(s.ID, turn, callback.Policy{Timeout: time.Hour, Heartbeat: 10 * time.Minute})
	e.wakes() // the runner's, had it run

	var view api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &view)
	if len(view.Callbacks) != 1 || view.Callbacks[0].ToolCallID != call || view.Callbacks[0].Tool != "start_build" ||
		view.Callbacks[0].Deadline.Sub(view.Callbacks[0].Opened) != 10*time.Minute {
		t.Fatalf("the session's callbacks: %+v", view.Callbacks)
	}
	raw := e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).body
	if strings.Contains(string(raw), token) || strings.Contains(string(raw), callback.Hash(token)) {
		t.Fatalf("the session's view shows the token or its hash: %s", raw)
	}

	path := "/sessions/" + s.ID + "/callbacks/" + call
	before := len(e.facts(s.ID))
	for _, c := range []struct {
		r    req
		want int
		msg  string
	}{
		{req{method: "POST", path: path, user: bob, body: `{"output":1}`}, http.StatusNotFound, "session not found"},
		{req{method: "POST", path: "/sessions/" + s.ID + "/callbacks/call_nope", user: alice, body: `{"output":1}`}, http.StatusNotFound, "waits for no callback"},
		{req{method: "POST", path: path, user: alice, body: `{"output":1,"error":"x"}`}, http.StatusBadRequest, "send one"},
		{req{method: "POST", path: path, user: alice, body: `{}`}, http.StatusBadRequest, "neither output nor error"},
		{req{method: "POST", path: path, user: alice, body: `{"output":1,"token":"x"}`}, http.StatusBadRequest, "token"},
		{req{method: "POST", path: path, user: alice, body: `{"error":"x","reason":"` + strings.Repeat("r", api.MaxReason+1) + `"}`}, http.StatusBadRequest, "reason"},
		{req{method: "POST", path: path, user: ""}, http.StatusUnauthorized, ""},
	} {
		got := e.must(c.want, c.r)
		if c.msg != "" && !strings.Contains(got.errorMessage(t), c.msg) {
			t.Errorf("%s %s as %q: %q, want it to say %q", c.r.method, c.r.path, c.r.user, got.errorMessage(t), c.msg)
		}
	}
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("refusals wrote %d fact(s)", n-before)
	}
	if w := e.wakes(); len(w) != 0 {
		t.Fatalf("refusals woke the session: %+v", w)
	}

	var ok api.Accepted
	e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice, body: `{"error":"the build farm is down","reason":"checked by hand"}`}).json(t, &ok)
	if ok.Status != "failed" {
		t.Fatalf("answer %+v, want status failed", ok)
	}
	fs := e.facts(s.ID)
	end := fs[len(fs)-1]
	if len(fs) != before+1 || end.Type != reducer.CallbackEnded || end.Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: alice}) ||
		end.Reason != "checked by hand" || end.Callback.Status != callback.Failed || end.Callback.Error != "the build farm is down" {
		t.Fatalf("facts after the completion: %d new, last %+v", len(fs)-before, end)
	}
	if w := e.wakes(); len(w) != 1 || w[0].Session != s.ID || w[0].Reason != wake.Callback {
		t.Fatalf("wakes: %+v, want one for the callback", w)
	}
	if c, _ := e.state(s.ID).Turn.Callback(call); c.By != "operator:"+alice {
		t.Fatalf("the callback was ended by %q", c.By)
	}
	view = api.Session{}
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &view)
	if len(view.Callbacks) != 0 {
		t.Fatalf("an ended callback is still shown: %+v", view.Callbacks)
	}

	after := len(e.facts(s.ID))
	if msg := e.must(http.StatusConflict, req{method: "POST", path: path, user: alice, body: `{"output":"again"}`}).errorMessage(t); !strings.Contains(msg, "already ended") {
		t.Fatalf("a second completion by hand: %q", msg)
	}
	e.must(http.StatusConflict, req{method: "POST", path: "/callbacks/" + token, body: `{"output":"again"}`})
	if n := len(e.facts(s.ID)); n != after {
		t.Fatalf("second completions wrote %d fact(s)", n-after)
	}

	idle := e.create(alice)
	e.must(http.StatusNotFound, req{method: "POST", path: "/sessions/" + idle.ID + "/callbacks/" + call, user: alice, body: `{"output":1}`})
}

// TestCompleteCallByHandExpiredAndReplayed: a callback past its deadline
// is a 410 and writes nothing; a completion sent again under its
// Idempotency-Key is answered as it was, writing nothing more.
func TestCompleteCallByHandExpiredAndReplayed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	late, _ := e.suspendForCallback(s.ID, turn, callback.Policy{Timeout: time.Minute})
	e.wait(2 * time.Minute)
	before := len(e.facts(s.ID))
	if msg := e.must(http.StatusGone, req{method: "POST", path: "/sessions/" + s.ID + "/callbacks/" + late, user: alice, body: `{"output":1}`}).errorMessage(t); !strings.Contains(msg, "expired") {
		t.Fatalf("an expired callback: %q", msg)
	}
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("an expired completion wrote %d fact(s)", n-before)
	}

	s2 := e.create(alice)
	turn2, _ := e.startTurn(s2.ID)
	call, _ := e.suspendForCallback(s2.ID, turn2, callback.Policy{Timeout: time.Hour})
	r := req{method: "POST", path: "/sessions/" + s2.ID + "/callbacks/" + call, user: alice, body: `{"output":{"build":7}}`, header: keyed(ids.New("key"))}
	first := e.must(http.StatusAccepted, r)
	n := len(e.facts(s2.ID))
	again := e.must(http.StatusAccepted, r)
	if string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry: %s %v, want %s replayed", again.body, again.header, first.body)
	}
	if m := len(e.facts(s2.ID)); m != n {
		t.Fatalf("the retry wrote %d fact(s)", m-n)
	}
}
