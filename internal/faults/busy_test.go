package faults_test

import (
	"encoding/json"
	"fmt"
	"github.com/baton-run/baton/internal/retry"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/pkg/turn"
)

// TestBusySessionAnswersAlikeInBothAPIs makes every DynamoDB write lose
// its race, as when other writers keep winning a session's compare-and-set,
// and posts a message through the operator API and through the chat: the
// session store gives up with ErrBusy within the request budget, and both
// answer 503 with Retry-After (one status table), each in its own words,
// having written nothing.
func TestBusySessionAnswersAlikeInBothAPIs(t *testing.T) {
	s := newStack(t, hello, turn.Limits{})
	// Losing its race three times is busy, however long each try takes:
	// the answer does not depend on the machine's speed, and the request's
	// budget is long enough never to be what ends it.
	s.sessions.Retry = retry.Policy{Attempts: 3, Base: time.Millisecond, Max: time.Millisecond}
	id := s.session(t)
	chatID := fmt.Sprintf("c%d", time.Now().UnixNano())
	chatSession := chat.SessionID("alice", chatID)
	if _, err := s.sessions.Create(t.Context(), chatSession, "alice", "demo"); err != nil {
		t.Fatal(err)
	}
	api := operator.New(operator.Config{Sessions: s.sessions, Agents: func(n string) bool { return n == "demo" },
		Identity:      func(*http.Request) (string, bool) { return "alice", true },
		RequestBudget: time.Minute, Chat: chat.Options{DefaultAgent: "demo"}, Log: slog.New(slog.DiscardHandler)})
	chatBody := fmt.Sprintf(`{"id":%q,"trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hello"}]}]}`, chatID)
	for _, c := range []struct{ name, path, body, session, noun string }{
		{"operator", "/sessions/" + id + "/messages", `{"text":"hello"}`, id, "session"},
		{"chat", "/chat", chatBody, chatSession, "chat"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(s.facts(t, c.session))
			s.ft.Set(faults.Rule{Op: "dynamodb:TransactWriteItems", Fault: faults.Conflict})
			req := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			api.ServeHTTP(w, req)
			s.ft.Set()
			if len(s.ft.Injected()) == 0 {
				t.Fatal("no write lost its race")
			}
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
				t.Fatalf("busy session: %d, Retry-After %q, %s; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
			}
			var e struct{ Error string }
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, "the "+c.noun+" is busy") {
				t.Fatalf("body %s: want the %s's busy message (%v)", w.Body, c.noun, err)
			}
			if n := len(s.facts(t, c.session)); n != before {
				t.Fatalf("%d facts after a busy refusal, want %d", n, before)
			}
		})
	}
}
