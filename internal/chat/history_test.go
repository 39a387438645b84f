package chat_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// uiMessage is a message of GET /chat/{id}/messages.
type uiMessage struct {
	ID       string          `json:"id"`
	Role     string          `json:"role"`
	Metadata json.RawMessage `json:"metadata"`
	Parts    []struct {
		Type       string          `json:"type"`
		Text       string          `json:"text"`
		State      string          `json:"state"`
		ToolCallID string          `json:"toolCallId"`
		Output     json.RawMessage `json:"output"`
		ErrorText  string          `json:"errorText"`
		Approval   *struct {
			ID       string `json:"id"`
			Approved *bool  `json:"approved"`
		} `json:"approval"`
	} `json:"parts"`
}

func history(t *testing.T, ctx context.Context, c client, id string) []uiMessage {
	t.Helper()
	var out []uiMessage
	if code, body := c.call(ctx, "GET", "/chat/"+id+"/messages", "", &out); code != http.StatusOK {
		t.Fatalf("messages of %s: %d %s", id, code, body)
	}
	return out
}

func (m uiMessage) text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TestChatMessages: GET /chat/{id}/messages gives the chat back as the AI
// SDK's UIMessage[]: the user's message, and once the turn ended its whole
// reply under the turn's id with its text, steps and tool parts, shaped
// per major (approval states for 6 and 7, none for 5). While the turn is
// open only its user message is listed: the reply is the resume stream's.
func TestChatMessages(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := client{t: t, who: "hana", version: "6"}
	id, msg := newID("chat"), newID("m")
	if got := history(t, ctx, c, id); len(got) != 0 {
		t.Fatalf("a new chat's messages: %+v", got)
	}
	first, _ := events(t, c.request(ctx, "POST", "/chat", userBody(id, msg, "Send the team a status update", `,"agent":"demo"`)), nil)
	turn := first[0].MessageID
	var req chunk
	for _, ch := range first {
		if ch.Type == "tool-approval-request" {
			req = ch
		}
	}
	if got := history(t, ctx, c, id); len(got) != 1 || got[0].ID != msg || got[0].Role != "user" || got[0].text() != "Send the team a status update" {
		t.Fatalf("messages while the turn waits: %+v", got)
	}
	events(t, c.request(ctx, "POST", "/chat", approvalBody(id, turn, req.ToolCallID, req.ApprovalID, true)), nil)
	for _, v := range []string{"5", "6", "7"} {
		got := history(t, ctx, client{t: t, who: "hana", version: v}, id)
		if len(got) != 2 || got[0].ID != msg || got[1].ID != turn || got[1].Role != "assistant" {
			t.Fatalf("v%s: messages after the turn: %+v", v, got)
		}
		reply := got[1]
		if !strings.Contains(reply.text(), "Let me look up the weather") || !strings.Contains(reply.text(), "Done: the weather in Lisbon is clear") {
			t.Errorf("v%s: reply text %q", v, reply.text())
		}
		steps, tool := 0, false
		for _, p := range reply.Parts {
			switch {
			case p.Type == "step-start":
				steps++
			case p.ToolCallID == req.ToolCallID:
				tool = true
				if p.Type != "tool-send_email" || p.State != "output-available" || len(p.Output) == 0 {
					t.Errorf("v%s: approved call's part: %+v", v, p)
				}
				if approved := p.Approval != nil && p.Approval.ID == req.ApprovalID && p.Approval.Approved != nil && *p.Approval.Approved; approved != (v != "5") {
					t.Errorf("v%s: approved call's approval: %+v", v, p.Approval)
				}
			}
		}
		if steps < 2 || !tool || len(reply.Metadata) == 0 {
			t.Errorf("v%s: reply has %d steps, the approved call %v, metadata %s", v, steps, tool, reply.Metadata)
		}
	}
	// Another caller's copy of the chat is empty, as for a new chat.
	if got := history(t, ctx, client{t: t, who: "mallory"}, id); len(got) != 0 {
		t.Fatalf("another caller reads %+v", got)
	}
	if code, _ := (client{t: t, who: "hana", version: "4"}).call(ctx, "GET", "/chat/"+id+"/messages", "", nil); code != http.StatusBadRequest {
		t.Fatalf("messages for major 4: %d", code)
	}
}

// TestTurnStreamRouteShapedPerMajor: the operator's turn-stream route, read
// as Server-Sent Events with x-ai-sdk-version, is shaped like /chat for
// that major (a denial: no approval chunks and an output-error for 5, the
// request and output-denied for 6); without the header it is baton's
// parts as they are.
func TestTurnStreamRouteShapedPerMajor(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := client{t: t, who: "ivan", version: "6"}
	id := newID("chat")
	first, _ := events(t, c.request(ctx, "POST", "/chat", userBody(id, newID("m"), "Send the team a status update", `,"agent":"demo"`)), nil)
	turn := first[0].MessageID
	var req chunk
	for _, ch := range first {
		if ch.Type == "tool-approval-request" {
			req = ch
		}
	}
	events(t, c.request(ctx, "POST", "/chat", approvalBody(id, turn, req.ToolCallID, req.ApprovalID, false)), nil)
	read := func(version string) map[string]int {
		r, err := http.NewRequestWithContext(ctx, "GET", base+"/sessions/"+id+"/turns/"+turn+"/stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Accept", "text/event-stream")
		r.Header.Set("X-Baton-Operator", "ivan")
		if version != "" {
			r.Header.Set("X-Ai-Sdk-Version", version)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		got, done := events(t, resp, nil)
		if !done {
			t.Fatalf("v%q: the stream did not end", version)
		}
		return types(got)
	}
	if n := read("5"); n["tool-approval-request"] != 0 || n["tool-approval-response"] != 0 || n["tool-output-denied"] != 0 || n["tool-output-error"] != 1 {
		t.Errorf("major 5: %v", n)
	}
	if n := read("6"); n["tool-approval-request"] != 1 || n["tool-approval-response"] != 0 || n["tool-output-denied"] != 1 {
		t.Errorf("major 6: %v", n)
	}
	if n := read(""); n["tool-approval-request"] != 1 || n["tool-approval-response"] != 1 || n["tool-output-denied"] != 1 {
		t.Errorf("no major: %v", n)
	}
}
