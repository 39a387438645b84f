package session_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// waiting is a session whose open turn is suspended for the callbacks of
// its tool calls: their ids and tokens.
type waiting struct {
	id, turn string
	calls    []string
	tokens   []string
}

// suspendForCallbacks records, as the runner does, a turn of a new
// session of alice's whose n tool calls each handed out a callback of
// policy p, suspended for them.
func suspendForCallbacks(t *testing.T, ss *session.Store, n int, p callback.Policy) waiting {
	t.Helper()
	ctx := t.Context()
	w := waiting{id: ids.New("s"), turn: ids.New("turn")}
	st, err := ss.Create(ctx, w.id, "alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: w.turn}
	facts := []reducer.Fact{
		{Type: reducer.MessageReceived, Actor: alice, Message: &reducer.Message{ID: ids.New("msg"), Text: "build it"}},
		{Type: reducer.TurnStarted, Actor: agent, Turn: w.turn, Stream: w.turn, Lease: time.Now().Add(10 * time.Minute)},
	}
	for range n {
		call := ids.New("call")
		token, tok := callback.Mint(w.id, w.turn)
		w.calls, w.tokens = append(w.calls, call), append(w.tokens, token)
		facts = append(facts,
			reducer.Fact{Type: reducer.ExecutionStarted, Actor: agent, Turn: w.turn,
				Execution: &reducer.Execution{ID: reducer.ExecutionID(call, 1), ToolCallID: call, Tool: "start_build"}},
			reducer.Fact{Type: reducer.CallbackOpened, Actor: agent, Turn: w.turn,
				Callback: &callback.Callback{ToolCallID: call, Tool: "start_build", Attempt: 1, Hash: tok.Hash, Policy: p}})
	}
	facts = append(facts, reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: w.turn, Cause: reducer.CauseCallback})
	if _, err := ss.Append(ctx, w.id, st, facts...); err != nil {
		t.Fatal(err)
	}
	return w
}

func factCount(t *testing.T, ss *session.Store, id string) int {
	t.Helper()
	fs, err := ss.Facts(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(fs)
}

// TestCompleteCallByHand: the session's owner ends a call's callback by
// its tool call id, with no token: callback.ended records the result,
// the operator and the reason; the turn is woken once its last callback
// ended, not before; a second end, by hand or by the token, is refused
// and writes nothing.
func TestCompleteCallByHand(t *testing.T) {
	t.Parallel()
	mem := teststack.NewMemory()
	ss := mem.Sessions()
	ctx := t.Context()
	w := suspendForCallbacks(t, ss, 2, callback.Policy{Timeout: time.Hour})

	if err := ss.CompleteCall(ctx, w.id, w.calls[0], alice, callback.Result{Error: "the build farm is down"}, "told by ops"); err != nil {
		t.Fatal(err)
	}
	if due := mem.Wakes.TakeDue(); len(due) != 0 {
		t.Fatalf("woken with a callback still open: %+v", due)
	}
	if err := ss.CompleteCall(ctx, w.id, w.calls[1], alice, callback.Result{Output: json.RawMessage(`{"build":7}`)}, ""); err != nil {
		t.Fatal(err)
	}
	due := mem.Wakes.TakeDue()
	if len(due) != 1 || due[0].Wake.Session != w.id || due[0].Wake.Reason != wake.Callback {
		t.Fatalf("wakes after the last end: %+v, want one callback wake", due)
	}

	st := teststack.Load(t, ss, w.id)
	failed, _ := st.Turn.Callback(w.calls[0])
	done, _ := st.Turn.Callback(w.calls[1])
	if failed.Status != callback.Failed || failed.Error != "the build farm is down" || failed.By != "operator:alice" {
		t.Fatalf("the failed callback: %+v", failed)
	}
	if done.Status != callback.Completed || string(done.Output) != `{"build":7}` || done.By != "operator:alice" {
		t.Fatalf("the completed callback: %+v", done)
	}
	fs := teststack.Facts(t, ss, w.id)
	if ended := teststack.Count(fs, reducer.CallbackEnded); ended != 2 {
		t.Fatalf("%d callback.ended facts, want 2", ended)
	}
	for _, f := range fs {
		if f.Type == reducer.CallbackEnded && f.Callback.Status == callback.Failed && (f.Reason != "told by ops" || f.Actor != alice) {
			t.Fatalf("the failure's fact: %+v", f)
		}
	}

	n := len(fs)
	if err := ss.CompleteCall(ctx, w.id, w.calls[1], alice, callback.Result{Output: json.RawMessage(`"again"`)}, ""); !errors.Is(err, callback.ErrDone) {
		t.Fatalf("a second end by hand: %v, want ErrDone", err)
	}
	if err := ss.Complete(ctx, w.tokens[0], reducer.Actor{Kind: reducer.ActorCallback, ID: "token"}, callback.Result{Output: json.RawMessage(`1`)}); !errors.Is(err, callback.ErrDone) {
		t.Fatalf("the token after an end by hand: %v, want ErrDone", err)
	}
	if got := factCount(t, ss, w.id); got != n {
		t.Fatalf("refused ends wrote %d fact(s)", got-n)
	}
	if due := mem.Wakes.TakeDue(); len(due) != 0 {
		t.Fatalf("refused ends woke the turn: %+v", due)
	}
}

// TestCompleteCallRefusals: a call that handed out no callback, a
// session with no open turn or none at all, a bad result and a callback
// past its deadline are refused, each with its error, writing nothing.
func TestCompleteCallRefusals(t *testing.T) {
	t.Parallel()
	mem := teststack.NewMemory()
	ss := mem.Sessions()
	ctx := t.Context()
	w := suspendForCallbacks(t, ss, 1, callback.Policy{Timeout: time.Minute})
	idle := ids.New("s")
	if _, err := ss.Create(ctx, idle, "alice", "demo"); err != nil {
		t.Fatal(err)
	}
	ok := callback.Result{Output: json.RawMessage(`true`)}
	for _, c := range []struct {
		name, id, call string
		r              callback.Result
		want           error
	}{
		{"unknown call", w.id, "call_nope", ok, callback.ErrUnknown},
		{"no open turn", idle, w.calls[0], ok, callback.ErrUnknown},
		{"no session", ids.New("s"), w.calls[0], ok, session.ErrNotFound},
		{"output and error", w.id, w.calls[0], callback.Result{Output: json.RawMessage(`1`), Error: "x"}, callback.ErrBadResult},
		{"neither", w.id, w.calls[0], callback.Result{}, callback.ErrBadResult},
		{"not JSON", w.id, w.calls[0], callback.Result{Output: json.RawMessage(`{`)}, callback.ErrBadResult},
	} {
		before := factCount(t, ss, w.id)
		if err := ss.CompleteCall(ctx, c.id, c.call, alice, c.r, ""); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if got := factCount(t, ss, w.id); got != before {
			t.Errorf("%s: wrote %d fact(s)", c.name, got-before)
		}
	}
	mem.Clock.Advance(2 * time.Minute)
	before := factCount(t, ss, w.id)
	if err := ss.CompleteCall(ctx, w.id, w.calls[0], alice, ok, ""); !errors.Is(err, callback.ErrExpired) {
		t.Fatalf("past its deadline: %v, want ErrExpired", err)
	}
	if got := factCount(t, ss, w.id); got != before {
		t.Fatalf("an expired end wrote %d fact(s)", got-before)
	}
	if due := mem.Wakes.TakeDue(); len(due) != 0 {
		t.Fatalf("refusals woke a turn: %+v", due)
	}
}
