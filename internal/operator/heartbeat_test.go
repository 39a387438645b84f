package operator_test

import (
	"bufio"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/operator"
)

// TestEventStreamsSendHeartbeats opens the event streams of a running turn
// that writes no parts, the operator's and the chat's: each sends comment
// heartbeats while nothing new arrives.
func TestEventStreamsSendHeartbeats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *operator.Config) {
		c.StreamHold = time.Minute
		c.Heartbeat = 10 * time.Millisecond
		c.Chat = chat.Options{DefaultAgent: "demo"}
	})
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	chatID := ids.New("chat")
	if _, err := e.store.Create(t.Context(), chat.SessionID(alice, chatID), alice, "demo"); err != nil {
		t.Fatal(err)
	}
	e.startTurn(chat.SessionID(alice, chatID))
	for _, path := range []string{"/sessions/" + s.ID + "/turns/" + turn + "/stream", "/chat/" + chatID + "/stream"} {
		t.Run(path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a failure bound, not a measure
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set(userHeader, alice)
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("stream: %d", resp.StatusCode)
			}
			beats := 0
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() && beats < 3 {
				if sc.Text() == ": ping" {
					beats++
				}
			}
			if beats < 3 {
				t.Fatalf("the stream ended (%v) after %d heartbeats, want 3", sc.Err(), beats)
			}
		})
	}
}
