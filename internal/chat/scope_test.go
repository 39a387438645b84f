package chat_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/chat"
)

// TestChatIDsAreTheCallers: two callers using the same chat id each get a
// chat of their own, answered 200 with their own turn; neither sees the
// other's messages through the chat routes or the session routes, which
// accept the chat id for its owner.
func TestChatIDsAreTheCallers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	id := newID("chat")
	erin, mallory := client{t: t, who: "erin"}, client{t: t, who: "mallory"}
	texts := map[string]string{"erin": "Erin asks: what's the weather in Oslo?", "mallory": "Mallory asks: what's the weather in Rome?"}
	turns := map[string]string{}
	for _, c := range []client{erin, mallory} {
		chunks, done := events(t, c.request(ctx, "POST", "/chat", userBody(id, newID("m"), texts[c.who], "")), nil)
		if !done || len(chunks) == 0 || chunks[0].Type != "start" {
			t.Fatalf("%s's chat %s: done %v, %v", c.who, id, done, types(chunks))
		}
		turns[c.who] = chunks[0].MessageID
	}
	if turns["erin"] == turns["mallory"] {
		t.Fatalf("both callers' chats answered by turn %s", turns["erin"])
	}
	for _, c := range []client{erin, mallory} {
		other := "mallory"
		if c.who == other {
			other = "erin"
		}
		var sess sessionView
		if code, body := c.call(ctx, "GET", "/sessions/"+id, "", &sess); code != http.StatusOK || sess.ID != chat.SessionID(c.who, id) {
			t.Fatalf("%s: GET /sessions/{chat id}: %d %s, want session %s", c.who, code, body, chat.SessionID(c.who, id))
		}
		code, body := c.call(ctx, "GET", "/sessions/"+id+"/facts", "", nil)
		if code != http.StatusOK || !strings.Contains(body, texts[c.who]) || strings.Contains(body, texts[other]) || strings.Contains(body, other) {
			t.Fatalf("%s's facts: %d %s; want their own message only", c.who, code, body)
		}
		// The other's session, named by its own id, is not found.
		if code, _ := c.call(ctx, "GET", "/sessions/"+chat.SessionID(other, id), "", nil); code != http.StatusNotFound {
			t.Fatalf("%s reads %s's chat session: %d, want 404", c.who, other, code)
		}
		if code, body := c.call(ctx, "GET", "/chat/"+id+"/stream", "", nil); code == http.StatusOK && strings.Contains(body, turns[other]) {
			t.Fatalf("%s's resume shows %s's turn: %s", c.who, other, body)
		}
	}
}
