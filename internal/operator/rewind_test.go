package operator_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// runTurn records a turn that answers text with one step calling charge
// once for each of calls (each with its execution, and a result when
// done says so), then its final text, and ends it completed.
func (e *env) runTurn(id, text string, calls []string, done []bool) string {
	e.t.Helper()
	turn := ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	e.append(id,
		reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "seed"},
			Message: &reducer.Message{ID: ids.New("msg"), Text: text}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn})
	ps := []parts.Part{{Type: parts.Start}, {Type: parts.StartStep}}
	for _, c := range calls {
		ps = append(ps, parts.Part{Type: parts.ToolInputAvailable, ToolCallID: c, ToolName: "charge", Input: json.RawMessage(`{"cents":100}`)})
	}
	ps = append(ps, parts.Part{Type: parts.FinishStep})
	for i, c := range calls {
		e.append(id, reducer.Fact{Type: reducer.ExecutionStarted, Actor: agent, Turn: turn,
			Execution: &reducer.Execution{ID: reducer.ExecutionID(c, 1), ToolCallID: c, Tool: "charge"}})
		if done[i] {
			ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: c, Output: json.RawMessage(`{"charged":true}`)})
		} else {
			ps = append(ps, parts.Part{Type: parts.ToolOutputError, ToolCallID: c, ErrorText: "abandoned"})
		}
	}
	ps = append(ps, parts.Part{Type: parts.StartStep}, parts.Part{Type: parts.TextStart, ID: "t"},
		parts.Part{Type: parts.TextDelta, ID: "t", Delta: "Done: " + text}, parts.Part{Type: parts.TextEnd, ID: "t"},
		parts.Part{Type: parts.FinishStep})
	sink := e.store.OpenStream(id, turn)
	if err := sink.Append(ps...); err != nil {
		e.t.Fatal(err)
	}
	if err := sink.Flush(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	sess, err := e.store.Load(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.End(e.t.Context(), sess, conversation.Replay(ps), reducer.Fact{Type: reducer.TurnCompleted, Actor: agent, Turn: turn}); err != nil {
		e.t.Fatal(err)
	}
	return turn
}

// history is the conversation a fresh load of the session rebuilds.
func (e *env) history(id string) []conversation.Message {
	e.t.Helper()
	sess, err := e.store.Load(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return sess.History
}

// TestRewindRoute: a rewind to the end of turn one takes the rebuilt
// conversation back to what it was then, keeps every fact, and lists the
// side effects of turn two (one completed, one not). Another caller's
// session is not found, bad points are refused, and a turn that is open
// refuses it unless the request says to cancel it; refusals write
// nothing.
func TestRewindRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice, bob := ids.New("alice"), ids.New("bob")
	s := e.create(alice)
	one := e.runTurn(s.ID, "first", []string{"call_a"}, []bool{true})
	atOne := e.history(s.ID)
	two := e.runTurn(s.ID, "second", []string{"call_b", "call_c"}, []bool{true, false})
	before := len(e.facts(s.ID))
	path := "/sessions/" + s.ID + "/rewind"
	for _, c := range []struct {
		r    req
		want int
		msg  string
	}{
		{req{method: "POST", path: path, user: bob, body: `{"turn":"` + one + `"}`}, http.StatusNotFound, "not found"},
		{req{method: "POST", path: path, user: alice, body: `{}`}, http.StatusBadRequest, "name a turn"},
		{req{method: "POST", path: path, user: alice, body: `{"turn":"turn_nope"}`}, http.StatusBadRequest, "no turn"},
		{req{method: "POST", path: path, user: alice, body: `{"turn":"` + one + `","before":"` + two + `"}`}, http.StatusBadRequest, "give one"},
		{req{method: "POST", path: path, user: alice, body: `{"turn":"` + one + `","step":-1}`}, http.StatusBadRequest, "negative"},
		{req{method: "POST", path: path, user: alice, body: `{"turn":"` + one + `","step":3}`}, http.StatusBadRequest, "2 steps, not 3"},
		{req{method: "POST", path: path, user: alice, body: `{"turn":"` + one + `","what":1}`}, http.StatusBadRequest, ""},
	} {
		got := e.must(c.want, c.r)
		if c.msg != "" && !strings.Contains(got.errorMessage(t), c.msg) {
			t.Errorf("%s as %q: %q, want it to say %q", c.r.body, c.r.user, got.errorMessage(t), c.msg)
		}
	}
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("refused rewinds wrote %d facts", n-before)
	}

	var out api.Rewound
	e.must(http.StatusOK, req{method: "POST", path: path, user: alice, body: `{"turn":"` + one + `"}`}).json(t, &out)
	want := []reducer.Effect{
		{Turn: two, Execution: "ex_call_b", ToolCallID: "call_b", Tool: "charge", Completed: true},
		{Turn: two, Execution: "ex_call_c", ToolCallID: "call_c", Tool: "charge"},
	}
	if out.Session != s.ID || out.Point.Turn != one || out.Status != reducer.Idle || !reflect.DeepEqual(out.Effects, want) {
		t.Fatalf("rewind answered %+v; want effects %+v", out, want)
	}
	fs := e.facts(s.ID)
	if len(fs) != before+1 || fs[len(fs)-1].Type != reducer.SessionRewound {
		t.Fatalf("the rewind wrote %d facts, the last %s", len(fs)-before, fs[len(fs)-1].Type)
	}
	if got := e.history(s.ID); !reflect.DeepEqual(got, atOne) {
		t.Fatalf("the rebuilt conversation after the rewind:\n%+v\nwant the one at turn one's end:\n%+v", got, atOne)
	}

	// A turn open refuses, unless cancelled first.
	turn, _ := e.startTurn(s.ID)
	before = len(e.facts(s.ID))
	got := e.must(http.StatusConflict, req{method: "POST", path: path, user: alice, body: `{"before":"` + one + `"}`})
	if !strings.Contains(got.errorMessage(t), "cancel") {
		t.Errorf("409 says %q", got.errorMessage(t))
	}
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("a refused rewind wrote %d facts", n-before)
	}
	e.must(http.StatusOK, req{method: "POST", path: path, user: alice, body: `{"before":"` + one + `","cancel":true}`}).json(t, &out)
	fs = e.facts(s.ID)
	if tail := fs[before:]; len(tail) != 2 || tail[0].Type != reducer.TurnCancelled || tail[0].Turn != turn || tail[1].Type != reducer.SessionRewound {
		t.Fatalf("a rewind with cancel wrote %v", factTypes(tail))
	}
	if len(out.Effects) != 3 || e.history(s.ID) != nil || e.state(s.ID).Status != reducer.Idle {
		t.Fatalf("back before turn one: effects %+v, history %+v, status %s", out.Effects, e.history(s.ID), e.state(s.ID).Status)
	}
}

// TestForkRoute: a fork at the end of turn one and one within turn two
// make new sessions of the same owner, each rebuilding the conversation at
// its point, the original untouched; the step fork's turn is reopened,
// suspended for its budget, and woken. Another caller cannot fork, nor
// see the fork, and a fork during a turn is refused.
func TestForkRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice, bob := ids.New("alice"), ids.New("bob")
	s := e.create(alice)
	one := e.runTurn(s.ID, "first", []string{"call_a"}, []bool{true})
	atOne := e.history(s.ID)
	two := e.runTurn(s.ID, "second", []string{"call_b"}, []bool{true})
	e.wakes()
	before, history := e.facts(s.ID), e.history(s.ID)
	path := "/sessions/" + s.ID + "/fork"

	e.must(http.StatusNotFound, req{method: "POST", path: path, user: bob, body: `{"turn":"` + one + `"}`})
	var f1 api.Rewound
	resp := e.must(http.StatusCreated, req{method: "POST", path: path, user: alice, body: `{"turn":"` + one + `"}`})
	resp.json(t, &f1)
	if f1.Session == s.ID || f1.From != s.ID || resp.header.Get("Location") != "/sessions/"+f1.Session || len(f1.Effects) != 1 {
		t.Fatalf("fork answered %+v, Location %q", f1, resp.header.Get("Location"))
	}
	var view api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + f1.Session, user: alice}).json(t, &view)
	if view.From != s.ID || view.Status != reducer.Idle {
		t.Errorf("the fork's view: from %q, status %s", view.From, view.Status)
	}
	e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + f1.Session, user: bob})
	if got := e.history(f1.Session); !reflect.DeepEqual(got, atOne) {
		t.Fatalf("the fork rebuilds:\n%+v\nwant:\n%+v", got, atOne)
	}

	var f2 api.Rewound
	e.must(http.StatusCreated, req{method: "POST", path: path, user: alice, body: `{"turn":"` + two + `","step":1}`}).json(t, &f2)
	st := e.state(f2.Session)
	if f2.Status != reducer.Suspended || st.Turn == nil || st.Turn.Cause != reducer.CauseBudget || st.Turn.ID == two ||
		len(st.Turn.Executions) != 1 || st.Turn.Executions[0].ToolCallID != "call_b" || len(f2.Effects) != 0 {
		t.Fatalf("a fork within turn two: %+v, turn %+v", f2, st.Turn)
	}
	if w := e.wakes(); len(w) != 1 || w[0].Session != f2.Session {
		t.Fatalf("wakes after the step fork: %+v", w)
	}
	if !reflect.DeepEqual(e.history(f2.Session), atOne) {
		t.Fatalf("the step fork's history is not the one before turn two")
	}

	if after := e.facts(s.ID); !reflect.DeepEqual(after, before) || !reflect.DeepEqual(e.history(s.ID), history) {
		t.Fatalf("forks changed the original: %d facts, was %d", len(after), len(before))
	}
	e.startTurn(s.ID)
	n := len(e.facts(s.ID))
	e.must(http.StatusConflict, req{method: "POST", path: path, user: alice, body: `{"turn":"` + one + `"}`})
	if len(e.facts(s.ID)) != n {
		t.Fatalf("a refused fork wrote to the original")
	}
}

func factTypes(fs []reducer.Fact) []reducer.Type {
	out := make([]reducer.Type, len(fs))
	for i, f := range fs {
		out[i] = f.Type
	}
	return out
}
