package chat_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/pkg/reducer"
)

// A chat whose agent rejects messages while a turn is open answers a new
// message then with a 409 and a JSON message, and writes nothing.
func TestChatRejectsAMessageWhileATurnIsOpen(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := testenv.New(t)
	store := teststack.Sessions(env.Clients(), env)
	store.Steering = func(string) reducer.Steering { return reducer.SteerReject }
	srv := httptest.NewServer(chat.New(chat.Config{Sessions: store,
		Agents:   func(n string) bool { return n == "demo" },
		Identity: func(r *http.Request) (string, bool) { return "alice", true }}))
	defer srv.Close()

	chatID := ids.New("chat")
	id := chat.SessionID("alice", chatID) // the chat's session
	st, err := store.Create(ctx, id, "alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	turn := ids.New("turn")
	if _, err := store.Append(ctx, id, st,
		reducer.Fact{Type: reducer.MessageReceived, Actor: teststack.Alice, Message: &reducer.Message{ID: "m0", Text: "earlier"}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: turn}, Turn: turn, Stream: turn,
			Lease: time.Now().Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	before := len(teststack.Facts(t, store, id))
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/chat", strings.NewReader(userBody(chatID, "m1", "while it runs", `,"agent":"demo"`)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), `"error"`) || !strings.Contains(string(body), "takes no message while a turn is open") {
		t.Fatalf("POST /chat: %d %s, want 409 with a JSON message", resp.StatusCode, body)
	}
	if n := len(teststack.Facts(t, store, id)); n != before {
		t.Fatalf("%d facts after the refusal, want %d", n, before)
	}
}

// A chat whose agent interrupts takes a new message even while the turn
// waits for an approval: the message ends that turn in the same write, and
// the answer waits for the next turn (none starts here: no worker runs).
func TestChatInterruptEndsATurnWaitingForApproval(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := testenv.New(t)
	store := teststack.Sessions(env.Clients(), env)
	store.Steering = func(string) reducer.Steering { return reducer.SteerInterrupt }
	srv := httptest.NewServer(chat.New(chat.Config{Sessions: store, Options: chat.Options{Hold: 200 * time.Millisecond},
		Agents:   func(n string) bool { return n == "demo" },
		Identity: func(r *http.Request) (string, bool) { return "alice", true }}))
	defer srv.Close()

	chatID := ids.New("chat")
	id := chat.SessionID("alice", chatID) // the chat's session
	st, err := store.Create(ctx, id, "alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	turn := ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	if _, err := store.Append(ctx, id, st,
		reducer.Fact{Type: reducer.MessageReceived, Actor: teststack.Alice, Message: &reducer.Message{ID: "m0", Text: "earlier"}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(10 * time.Minute)},
		reducer.Fact{Type: reducer.ApprovalRequested, Actor: agent, Turn: turn,
			Approval: &reducer.Approval{ID: "ap1", ToolCallID: "tc1", Tool: "send_email", Input: []byte(`{}`)}},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseApproval}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/chat", strings.NewReader(userBody(chatID, "m1", "never mind", `,"agent":"demo"`)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "no turn started for it in time") {
		t.Fatalf("POST /chat: %d %s, want the message recorded and no new turn in time", resp.StatusCode, body)
	}
	fs := teststack.Facts(t, store, id)
	last, prev := fs[len(fs)-1], fs[len(fs)-2]
	if prev.Type != reducer.MessageReceived || prev.Message.ID != "m1" || prev.Message.Delivery != reducer.SteerInterrupt || last.Type != reducer.TurnInterrupted {
		t.Fatalf("last facts %s %+v, %s", prev.Type, prev.Message, last.Type)
	}
}
