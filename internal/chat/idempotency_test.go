package chat_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// keyed sends POST /chat with body under Idempotency-Key key.
func (c client) keyed(ctx context.Context, key, body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/chat", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Baton-Operator", c.who)
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// TestChatHonoursIdempotencyKey: POST /chat under an Idempotency-Key is
// answered again, with the same turn's stream from the same place and
// Idempotent-Replayed, when retried with the same body, even after the
// turn ended (when the message alone would be taken as new); with another
// body it is 422. Neither retry writes anything.
func TestChatHonoursIdempotencyKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := client{t: t, who: "ivy"}
	id, msg := newID("chat"), newID("m")
	ask := userBody(id, msg, "Send the team a status update", "")
	first, done := events(t, c.keyed(ctx, "k-ask-"+id, ask), nil)
	var req chunk
	for _, ch := range first {
		if ch.Type == "tool-approval-request" {
			req = ch
		}
	}
	if !done || req.ApprovalID == "" {
		t.Fatalf("first answer: %v", types(first))
	}
	turn := first[0].MessageID
	replayed := func(key, body string, want string) []chunk {
		t.Helper()
		before := quiet(t, ctx, c, id)
		resp := c.keyed(ctx, key, body)
		if resp.Header.Get("Idempotent-Replayed") != "true" {
			raw, _ := io.ReadAll(resp.Body)
			t.Fatalf("retry under %s: %d %v %s; want it replayed", key, resp.StatusCode, resp.Header, raw)
		}
		again, done := events(t, resp, nil)
		if !done || again[0].Type != "start" || again[0].MessageID != turn || types(again)[want] != 1 {
			t.Fatalf("replay under %s: %v, start %+v; want turn %s's stream with a %s", key, types(again), again[0], turn, want)
		}
		if after := factCount(t, ctx, c, id); after != before {
			t.Fatalf("replay under %s wrote %d facts", key, after-before)
		}
		return again
	}
	replayed("k-ask-"+id, ask, "tool-approval-request")

	before := quiet(t, ctx, c, id)
	resp := c.keyed(ctx, "k-ask-"+id, userBody(id, newID("m"), "Something else", ""))
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(raw), "different request") {
		t.Fatalf("same key, another body: %d %s; want 422", resp.StatusCode, raw)
	}
	if after := factCount(t, ctx, c, id); after != before {
		t.Fatalf("a refused key wrote %d facts", after-before)
	}

	approve := approvalBody(id, turn, req.ToolCallID, req.ApprovalID, true)
	rest, done := events(t, c.keyed(ctx, "k-approve-"+id, approve), nil)
	if !done || rest[0].MessageID != turn || types(rest)["finish"] != 1 {
		t.Fatalf("approval's answer: %v", types(rest))
	}
	again := replayed("k-approve-"+id, approve, "finish")
	if len(again) != len(rest) {
		t.Fatalf("approval replayed %d chunks, first answered %d", len(again), len(rest))
	}
	// The turn has ended: the message is no longer open, and only the key
	// tells the retry from a new message.
	replayed("k-ask-"+id, ask, "tool-approval-request")
}

// quiet is the fact count of session id once the turn has stopped writing:
// a stream ends at its last part, a moment before the runner's own fact
// (the suspension or the ending) lands, so a count taken at once could see
// the runner's write as the retry's.
func quiet(t *testing.T, ctx context.Context, c client, id string) int {
	t.Helper()
	n := factCount(t, ctx, c, id)
	for {
		var s sessionView
		if code, body := c.call(ctx, "GET", "/sessions/"+id, "", &s); code != http.StatusOK {
			t.Fatalf("session %s: %d %s", id, code, body)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s never stopped writing: %v", id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		m := factCount(t, ctx, c, id)
		if m == n && s.Status != "running" {
			return n
		}
		n = m
	}
}
