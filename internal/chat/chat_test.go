package chat_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/chat"
)

type sessionView struct {
	ID     string `json:"id"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
	Turn   *struct {
		ID string `json:"id"`
	} `json:"turn"`
	Turns int `json:"turns"`
}

func factCount(t *testing.T, ctx context.Context, c client, id string) int {
	t.Helper()
	var out struct {
		Facts []struct {
			Type string `json:"type"`
		} `json:"facts"`
	}
	if code, body := c.call(ctx, "GET", "/sessions/"+id+"/facts", "", &out); code != http.StatusOK {
		t.Fatalf("facts of %s: %d %s", id, code, body)
	}
	return len(out.Facts)
}

// TestChatTurnWithApproval drives the demo agent's turn through the chat
// endpoint as an unversioned client: the first message creates the session
// under the chat id, the answer streams up to the approval request, the
// approval sent as a tool part in approval-responded state runs the tool,
// and the rest of the turn follows under the same message id.
func TestChatTurnWithApproval(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := client{t: t, who: "alice"}
	id := newID("chat")
	first, done := events(t, c.request(ctx, "POST", "/chat", userBody(id, newID("m"), "Send the team a status update", `,"agent":"demo"`)), nil)
	n := types(first)
	if !done || first[0].Type != "start" || first[0].MessageID == "" || n["text-delta"] == 0 || n["tool-approval-request"] != 1 || n["data-suspended"] != 1 || n["finish"] != 0 {
		t.Fatalf("first response (done %v): %v", done, n)
	}
	if !strings.Contains(text(first), "Let me look up the weather") {
		t.Fatalf("text = %q", text(first))
	}
	turn := first[0].MessageID
	var sess sessionView
	if code, body := c.call(ctx, "GET", "/sessions/"+id, "", &sess); code != http.StatusOK || sess.ID != chat.SessionID("alice", id) || sess.Agent != "demo" || sess.Turn == nil || sess.Turn.ID != turn {
		t.Fatalf("GET /sessions/%s: %d %s", id, code, body)
	}
	var req chunk
	for _, ch := range first {
		if ch.Type == "tool-approval-request" {
			req = ch
		}
	}
	rest, done := events(t, c.request(ctx, "POST", "/chat", approvalBody(id, turn, req.ToolCallID, req.ApprovalID, true)), nil)
	n = types(rest)
	if !done || rest[0].Type != "start" || rest[0].MessageID != turn || n["tool-approval-response"] != 0 || n["tool-output-available"] != 1 || n["finish"] != 1 {
		t.Fatalf("second response (done %v): %v", done, n)
	}
	if !strings.Contains(text(rest), "Done: the weather in Lisbon is clear") || strings.Contains(text(rest), "Let me look up") {
		t.Fatalf("second response's text = %q", text(rest))
	}
	for _, ch := range rest {
		if ch.Type == "start" && ch.MessageID != turn {
			t.Fatalf("a second message began: %+v", ch)
		}
	}
	// The answer was accepted once: sent again, it is refused and writes nothing.
	before := factCount(t, ctx, c, id)
	if code, body := c.call(ctx, "POST", "/chat", approvalBody(id, turn, req.ToolCallID, req.ApprovalID, true), nil); code != http.StatusConflict || !strings.Contains(body, "not pending") {
		t.Fatalf("second approval: %d %s", code, body)
	}
	if after := factCount(t, ctx, c, id); after != before {
		t.Fatalf("a refused approval wrote %d facts", after-before)
	}
	// No turn is open: resuming answers 204.
	resp := c.request(ctx, "GET", "/chat/"+id+"/stream", "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("resume with no open turn: %d", resp.StatusCode)
	}
}

// TestChatResendsChangeNothing: a client resending its whole history, or
// the same new message again, appends nothing twice.
func TestChatResendsChangeNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client{t: t, who: "bob"}
	id, msg := newID("chat"), newID("m")
	// Read only the start of the answer, then send the same request again.
	events(t, c.request(ctx, "POST", "/chat", userBody(id, msg, "Send the team a status update", "")), func(ch chunk) bool { return ch.Type != "text-delta" })
	again, done := events(t, c.request(ctx, "POST", "/chat", userBody(id, msg, "Send the team a status update", "")), nil)
	if !done || again[0].Type != "start" || types(again)["tool-approval-request"] != 1 {
		t.Fatalf("resent request: %v", types(again))
	}
	var facts struct {
		Facts []struct {
			Type string `json:"type"`
		} `json:"facts"`
	}
	c.call(ctx, "GET", "/sessions/"+id+"/facts", "", &facts)
	messages := 0
	for _, f := range facts.Facts {
		if f.Type == "message.received" {
			messages++
		}
	}
	if messages != 1 {
		t.Fatalf("%d messages recorded, want 1: %+v", messages, facts.Facts)
	}
	// While the turn waits for an approval a new message is refused.
	before := factCount(t, ctx, c, id)
	if code, body := c.call(ctx, "POST", "/chat", userBody(id, newID("m"), "another", ""), nil); code != http.StatusConflict || !strings.Contains(body, "approval") {
		t.Fatalf("message while waiting for approval: %d %s", code, body)
	}
	if after := factCount(t, ctx, c, id); after != before {
		t.Fatalf("refused message wrote %d facts", after-before)
	}
}

// TestChatResumeAndStop: GET /chat/{id}/stream replays the open turn's
// message from its start, live; POST /chat/{id}/stop cancels it and the
// stream ends with finish.
func TestChatResumeAndStop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client{t: t, who: "carol", version: "7"}
	id := newID("chat")
	// Drop the first response after its first text.
	events(t, c.request(ctx, "POST", "/chat", userBody(id, newID("m"), "Send the team a status update", "")), func(ch chunk) bool { return ch.Type != "text-delta" })
	resumed, done := events(t, c.request(ctx, "GET", "/chat/"+id+"/stream", ""), nil)
	n := types(resumed)
	if !done || resumed[0].Type != "start" || n["start"] != 1 || n["tool-approval-request"] != 1 || !strings.HasPrefix(text(resumed), "Let me look up the weather") {
		t.Fatalf("resumed stream: %v %q", n, text(resumed))
	}
	if code, body := c.call(ctx, "POST", "/chat/"+id+"/stop", "", nil); code != http.StatusAccepted {
		t.Fatalf("stop: %d %s", code, body)
	}
	var sess sessionView
	c.call(ctx, "GET", "/sessions/"+id, "", &sess)
	if sess.Status != "idle" || sess.Turn != nil {
		t.Fatalf("after stop: %+v", sess)
	}
	if code, body := c.call(ctx, "POST", "/chat/"+id+"/stop", "", nil); code != http.StatusConflict {
		t.Fatalf("second stop: %d %s", code, body)
	}
	// The stopped turn's stream ends with a finish the client parses.
	var turnStream struct {
		Parts []struct {
			Part chunk `json:"part"`
		} `json:"parts"`
		Closed string `json:"closed"`
	}
	c.call(ctx, "GET", "/sessions/"+id+"/turns/"+resumed[0].MessageID+"/stream", "", &turnStream)
	if turnStream.Closed != "cancelled" {
		t.Fatalf("stream after stop: %+v", turnStream.Closed)
	}
}

// TestChatStopEndsALiveResponse: a response following a running turn ends
// when the turn is stopped.
func TestChatStopEndsALiveResponse(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client{t: t, who: "dan", version: "6"}
	id := newID("chat")
	stopped := false
	chunks, done := events(t, c.request(ctx, "POST", "/chat", userBody(id, newID("m"), "hi", "")), func(ch chunk) bool {
		if ch.Type == "text-delta" && !stopped {
			stopped = true
			if code, body := c.call(ctx, "POST", "/chat/"+id+"/stop", "", nil); code != http.StatusAccepted {
				t.Errorf("stop: %d %s", code, body)
			}
		}
		return true
	})
	last := chunks[len(chunks)-1]
	if !done || last.Type != "finish" || last.Finish != "other" || types(chunks)["tool-approval-request"] != 0 {
		t.Fatalf("stopped response (done %v) ends with %+v: %v", done, last, types(chunks))
	}
}

// TestResumeNewChat: a client opening a chat that does not exist yet with
// resume on (useChat's resume: true) gets 204 and no error, for any
// version, and the request creates nothing.
func TestResumeNewChat(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := newID("fresh")
	for _, v := range []string{"", "5", "6", "7"} {
		c := client{t: t, who: "alice", version: v}
		if code, body := c.call(ctx, "GET", "/chat/"+id+"/stream", "", nil); code != http.StatusNoContent || body != "" {
			t.Errorf("version %q: resume of a new chat: %d %q, want 204", v, code, body)
		}
	}
	if code, _ := (client{t: t, who: "alice"}).call(ctx, "GET", "/sessions/"+id, "", nil); code != http.StatusNotFound {
		t.Errorf("the resume created the chat: %d", code)
	}
}
