package chat_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/parts"
)

// TestChatBadInput: malformed bodies, a chat id of another caller, an
// approval for a call that is not pending and an unknown AI SDK version
// each get a 4xx with a JSON message, and write nothing.
func TestChatBadInput(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	owner := client{t: t, who: "erin"}
	taken := newID("chat")
	first, _ := events(t, owner.request(ctx, "POST", "/chat", userBody(taken, newID("m"), "Send the team a status update", "")), nil)
	var req chunk
	for _, ch := range first {
		if ch.Type == "tool-approval-request" {
			req = ch
		}
	}
	if req.ApprovalID == "" {
		t.Fatalf("no approval request in %v", types(first))
	}
	fresh := newID("chat")
	cases := []struct {
		name, who, version, chat, body string
		status                         int
		says                           string
	}{
		{"not JSON", "", "", fresh, `{"id":`, 400, "malformed JSON"},
		{"not an object", "", "", fresh, `[1]`, 400, "JSON object"},
		{"no id", "", "", fresh, `{"messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}]}`, 400, "id is required"},
		{"unsafe id", "", "", fresh, `{"id":"../x","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}]}`, 400, "not a chat id"},
		{"no messages", "", "", fresh, `{"id":"` + fresh + `","messages":[]}`, 400, "messages is required"},
		{"messages not a list", "", "", fresh, `{"id":"` + fresh + `","messages":{}}`, 400, "messages"},
		{"blank text", "", "", fresh, userBody(fresh, "m1", "  ", ""), 400, "must not be blank"},
		{"file part with a bad url", "", "", fresh, `{"id":"` + fresh + `","messages":[{"id":"m","role":"user","parts":[{"type":"file","url":"x"}]}]}`, 400, "url must be a data URL"},
		{"source part", "", "", fresh, `{"id":"` + fresh + `","messages":[{"id":"m","role":"user","parts":[{"type":"source-url","url":"x"}]}]}`, 400, "only text and file parts"},
		{"system last", "", "", fresh, `{"id":"` + fresh + `","messages":[{"id":"m","role":"system","parts":[{"type":"text","text":"x"}]}]}`, 400, "role"},
		{"regenerate a chat with none", "", "", fresh, `{"id":"` + fresh + `","trigger":"regenerate-message","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"x"}]}]}`, 404, "chat not found"},
		{"another caller regenerates", "mallory", "", taken, `{"id":"` + taken + `","trigger":"regenerate-message","messages":[]}`, 404, "chat not found"},
		{"regenerate an unknown message", "erin", "", taken, `{"id":"` + taken + `","trigger":"regenerate-message","messageId":"nope","messages":[]}`, 404, "no message"},
		{"regenerate a bad message id", "erin", "", taken, `{"id":"` + taken + `","trigger":"regenerate-message","messageId":"../x","messages":[]}`, 400, "not a message id"},
		{"unknown trigger", "", "", fresh, `{"id":"` + fresh + `","trigger":"resume-stream","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"x"}]}]}`, 400, "unknown"},
		{"unknown agent", "", "", fresh, userBody(fresh, "m1", "hi", `,"agent":"nope"`), 422, "unknown agent"},
		{"unknown version", "", "4", fresh, userBody(fresh, "m1", "hi", ""), 400, "want 5, 6 or 7"},
		{"version not a number", "", "latest", fresh, userBody(fresh, "m1", "hi", ""), 400, "want 5, 6 or 7"},
		{"assistant without answers", "", "", fresh, `{"id":"` + fresh + `","messages":[{"id":"a","role":"assistant","parts":[{"type":"text","text":"x"}]}]}`, 400, "approval-responded"},
		{"another caller approves", "mallory", "", taken, approvalBody(taken, "t", req.ToolCallID, req.ApprovalID, true), 404, "chat not found"},
		{"approval not pending", "erin", "", taken, approvalBody(taken, "t", req.ToolCallID, "ap_unknown", true), 409, "not pending"},
		{"approval bound to another call", "erin", "", taken, approvalBody(taken, "t", "tc_other", req.ApprovalID, true), 409, "not pending"},
		{"approval of a chat with none", "erin", "", fresh, approvalBody(fresh, "t", req.ToolCallID, req.ApprovalID, true), 404, "chat not found"},
	}
	before := factCount(t, ctx, owner, taken)
	for _, tc := range cases {
		c := client{t: t, who: tc.who, version: tc.version}
		if c.who == "" {
			c.who = "erin"
		}
		code, body := c.call(ctx, "POST", "/chat", tc.body, nil)
		var msg struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &msg); err != nil || code != tc.status || !strings.Contains(msg.Error, tc.says) {
			t.Errorf("%s: %d %s; want %d saying %q", tc.name, code, body, tc.status, tc.says)
		}
		if code, _ := owner.call(ctx, "GET", "/sessions/"+fresh, "", nil); code != http.StatusNotFound {
			t.Errorf("%s: created the chat: %d", tc.name, code)
		}
	}
	if after := factCount(t, ctx, owner, taken); after != before {
		t.Errorf("refused requests wrote %d facts", after-before)
	}
	// Another caller cannot read, resume or stop the chat either. Its
	// resume answers as for a chat that does not exist: 204, empty.
	m := client{t: t, who: "mallory"}
	for _, r := range []struct {
		method, path string
		status       int
	}{{"GET", "/chat/" + taken + "/stream", 204}, {"GET", "/chat/" + taken + "/messages", 200}, {"POST", "/chat/" + taken + "/stop", 404}, {"GET", "/sessions/" + taken, 404}} {
		if code, body := m.call(ctx, r.method, r.path, "", nil); code != r.status || strings.Contains(body, "erin") || strings.Contains(body, "tool") {
			t.Errorf("%s %s by another caller: %d %s, want %d", r.method, r.path, code, body, r.status)
		}
	}
	if code, body := owner.call(ctx, "GET", "/chat/"+taken+"/stream", "", nil); code != http.StatusOK || !strings.Contains(body, "tool-approval-request") {
		t.Errorf("owner's resume: %d", code)
	}
	if code, _ := (client{t: t, who: "erin", version: "8"}).call(ctx, "GET", "/chat/"+taken+"/stream", "", nil); code != http.StatusBadRequest {
		t.Errorf("resume with version 8: %d", code)
	}
	for _, r := range []struct {
		method, path string
		status       int
	}{{"GET", "/chat", 405}, {"DELETE", "/chat/" + taken + "/stream", 405}, {"POST", "/chat/" + taken + "/nope", 404}} {
		var msg struct {
			Error string `json:"error"`
		}
		if code, body := owner.call(ctx, r.method, r.path, "", &msg); code != r.status || msg.Error == "" {
			t.Errorf("%s %s: %d %s, want %d", r.method, r.path, code, body, r.status)
		}
	}
}

// TestVersionMap: each major gets only parts it parses.
func TestVersionMap(t *testing.T) {
	t.Parallel()
	yes := true
	ps := []parts.Part{
		{Type: parts.ToolApprovalRequest, ApprovalID: "ap", ToolCallID: "tc"},
		{Type: parts.ToolApprovalResponse, ApprovalID: "ap", Approved: &yes},
		{Type: parts.ToolOutputDenied, ToolCallID: "tc"},
		{Type: parts.Finish, FinishReason: "cancelled"},
		{Type: parts.Finish, FinishReason: "stop"},
		{Type: parts.TextDelta, ID: "t", Delta: "x"},
	}
	want := map[chat.Version]string{
		chat.V5:          "tool-output-error(denied by the operator) finish(other) finish(stop) text-delta",
		chat.V6:          "tool-approval-request tool-output-denied finish(other) finish(stop) text-delta",
		chat.Unversioned: "tool-approval-request tool-output-denied finish(other) finish(stop) text-delta",
		chat.V7:          "tool-approval-request tool-approval-response tool-output-denied finish(interrupted) finish(stop) text-delta",
	}
	for v, w := range want {
		var got []string
		for _, p := range ps {
			m, ok := v.Map(p)
			if !ok {
				continue
			}
			s := string(m.Type)
			if m.FinishReason != "" {
				s += "(" + m.FinishReason + ")"
			}
			if m.ErrorText != "" {
				s += "(" + m.ErrorText + ")"
			}
			got = append(got, s)
		}
		if g := strings.Join(got, " "); g != w {
			t.Errorf("version %d: %s, want %s", v, g, w)
		}
	}
}

// TestCORS: origins are allowed only when configured; preflights from
// others are refused.
func TestCORS(t *testing.T) {
	t.Parallel()
	h := chat.New(chat.Config{Options: chat.Options{AllowedOrigins: []string{"https://app.example"}}})
	preflight := func(origin string) *http.Response {
		r, _ := http.NewRequest("OPTIONS", "/chat", nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	if r := preflight("https://app.example"); r.StatusCode != 204 || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "X-Ai-Sdk-Version") {
		t.Errorf("allowed preflight: %d %v", r.StatusCode, r.Header)
	}
	if r := preflight("https://evil.example"); r.StatusCode != 403 || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("refused preflight: %d %v", r.StatusCode, r.Header)
	}
	none := chat.New(chat.Config{})
	r, _ := http.NewRequest("OPTIONS", "/chat", nil)
	r.Header.Set("Origin", "https://app.example")
	w := httptest.NewRecorder()
	none.ServeHTTP(w, r)
	if res := w.Result(); res.StatusCode != 403 {
		t.Errorf("no origins configured: %d", res.StatusCode)
	}
}
