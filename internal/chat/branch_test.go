package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// runToEnd reads the response to its end and, while the turn asks for
// the email's approval, denies it through the operator route (major 5 has
// no approval chunks), until the session is idle. It returns the answering
// message's id (the turn's).
func runToEnd(t *testing.T, ctx context.Context, c client, chat string, resp *http.Response) string {
	t.Helper()
	first, done := events(t, resp, nil)
	if !done || len(first) == 0 || first[0].Type != "start" || first[0].MessageID == "" {
		t.Fatalf("response: done %v, %v", done, types(first))
	}
	for {
		var sess struct {
			Status  string `json:"status"`
			Pending []struct {
				ApprovalID string `json:"approvalId"`
			} `json:"pending"`
		}
		if code, body := c.call(ctx, "GET", "/sessions/"+chat, "", &sess); code != http.StatusOK {
			t.Fatalf("session: %d %s", code, body)
		}
		if sess.Status == "idle" {
			return first[0].MessageID
		}
		for _, p := range sess.Pending {
			if code, body := c.call(ctx, "POST", "/sessions/"+chat+"/approvals/"+p.ApprovalID, `{"decision":"deny","reason":"not now"}`, nil); code != http.StatusAccepted {
				t.Fatalf("deny: %d %s", code, body)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the turn never ended: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func factTypes(t *testing.T, ctx context.Context, c client, chat string) map[string]int {
	t.Helper()
	var out struct {
		Facts []struct {
			Type string `json:"type"`
		} `json:"facts"`
	}
	if code, body := c.call(ctx, "GET", "/sessions/"+chat+"/facts", "", &out); code != http.StatusOK {
		t.Fatalf("facts: %d %s", code, body)
	}
	n := map[string]int{}
	for _, f := range out.Facts {
		n[f.Type]++
	}
	return n
}

// TestChatRegenerateAndEdit, for each AI SDK major: a regenerate of the
// last answer runs its turn again under a new message id, and the history
// shows the new answer in place of the old; an edit of the first message
// (a submit of its id with other text) goes back before its turn and
// answers the new text; the history then holds the edited message and its
// answer alone. A regenerate retried under its Idempotency-Key is answered
// again and goes back once. The turns gone back from stay in the facts.
func TestChatRegenerateAndEdit(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"5", "6", "7"} {
		t.Run("v"+v, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := client{t: t, who: "rita", version: v}
			chat, m1 := newID("chat"), newID("m")
			body := func(id, text string) string {
				return fmt.Sprintf(`{"id":%q,"trigger":"submit-message","agent":"demo","messages":[{"id":%q,"role":"user","parts":[{"type":"text","text":%q}]}]}`, chat, id, text)
			}
			t1 := runToEnd(t, ctx, c, chat, c.request(ctx, "POST", "/chat", body(m1, "Send the team a status update")))
			if h := history(t, ctx, c, chat); len(h) != 2 || h[1].ID != t1 {
				t.Fatalf("history after turn one: %+v", h)
			}

			regen := fmt.Sprintf(`{"id":%q,"trigger":"regenerate-message","messages":[{"id":%q,"role":"user","parts":[{"type":"text","text":"Send the team a status update"}]}]}`, chat, m1)
			resp := c.request(ctx, "POST", "/chat", regen)
			t2 := runToEnd(t, ctx, c, chat, resp)
			if t2 == t1 {
				t.Fatalf("the regenerated answer kept message id %s", t1)
			}
			h := history(t, ctx, c, chat)
			if len(h) != 2 || h[0].ID != m1 || h[1].ID != t2 || h[1].Role != "assistant" {
				t.Fatalf("history after the regenerate: %+v; want %s then %s", h, m1, t2)
			}

			edited := "Edited: send the status to ops instead"
			t3 := runToEnd(t, ctx, c, chat, c.request(ctx, "POST", "/chat", body(m1, edited)))
			h = history(t, ctx, c, chat)
			if len(h) != 2 || h[0].ID != m1 || h[0].text() != edited || h[1].ID != t3 || t3 == t2 {
				b, _ := json.Marshal(h)
				t.Fatalf("history after the edit: %s; want %s (%q) then %s", b, m1, edited, t3)
			}
			n := factTypes(t, ctx, c, chat)
			if n["session.rewound"] != 2 || n["turn.started"] != 3 || n["message.received"] != 2 {
				t.Fatalf("facts after a regenerate and an edit: %v", n)
			}

			// A regenerate under a key, sent twice: answered with the same
			// turn, gone back once.
			keyed := func() *http.Response {
				req, err := http.NewRequestWithContext(ctx, "POST", base+"/chat", strings.NewReader(regen))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Baton-Operator", c.who)
				req.Header.Set("X-Ai-Sdk-Version", v)
				req.Header.Set("Idempotency-Key", "regen-"+chat)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			t4 := runToEnd(t, ctx, c, chat, keyed())
			again, done := events(t, keyed(), nil)
			if !done || len(again) == 0 || again[0].MessageID != t4 || again[0].MessageID == t3 {
				t.Fatalf("the retried regenerate answered %v (done %v); want turn %s again", types(again), done, t4)
			}
			if n := factTypes(t, ctx, c, chat); n["session.rewound"] != 3 || n["turn.started"] != 4 {
				t.Fatalf("facts after a retried regenerate: %v", n)
			}
		})
	}
}
