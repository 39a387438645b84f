package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/pkg/turn"
)

// TestStalledStoreAnswers503 stops the store (every DynamoDB request is
// held, unsent, for longer than the request budget, then let through) and
// sends the operator API a request of each kind: each is answered 503 with
// Retry-After and a JSON message once the budget is spent, not when the
// store comes back, and writes nothing.
func TestStalledStoreAnswers503(t *testing.T) {
	for _, c := range []struct{ name, method, path, body string }{
		{"create", http.MethodPost, "/sessions", `{"agent":"demo"}`},
		{"list", http.MethodGet, "/sessions", ""},
		{"get", http.MethodGet, "/sessions/{id}", ""},
		{"message", http.MethodPost, "/sessions/{id}/messages", `{"text":"hello"}`},
		{"approve", http.MethodPost, "/sessions/{id}/approvals/ap1", `{"decision":"approve"}`},
		{"cancel", http.MethodPost, "/sessions/{id}/cancel", ""},
		{"stream page", http.MethodGet, "/sessions/{id}/turns/t1/stream", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, hello, turn.Limits{})
			id := s.awaitingApproval(t)
			before := len(s.facts(t, id))
			api := operator.New(operator.Config{Sessions: s.sessions, Agents: func(n string) bool { return n == "demo" },
				Identity:      func(*http.Request) (string, bool) { return "alice", true },
				RequestBudget: 100 * time.Millisecond, StreamHold: time.Second})
			// The store comes back after 3 s: an answer before then is the
			// budget's, one after it the store's.
			s.ft.Delay = 3 * time.Second
			s.ft.Set(faults.Rule{Op: "dynamodb:", Fault: faults.Stall})
			req := httptest.NewRequest(c.method, strings.ReplaceAll(c.path, "{id}", id), strings.NewReader(c.body))
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			w := httptest.NewRecorder()
			api.ServeHTTP(w, req)
			s.ft.Set()
			if len(s.ft.Injected()) == 0 {
				t.Fatal("no request stalled")
			}
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
				t.Fatalf("under a stalled store: %d, Retry-After %q, %s; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
			}
			var e struct{ Error string }
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("body %s: want a JSON error message (%v)", w.Body, err)
			}
			if n := len(s.facts(t, id)); n != before {
				t.Fatalf("%d facts after a request refused under a stall, want %d", n, before)
			}
			if c.name == "create" {
				if code, body := s.do(http.MethodGet, "/sessions", ""); !strings.Contains(body, `"sessions":[{`) || strings.Count(body, `"id"`) != 1 {
					t.Fatalf("sessions after a refused create: %d %s, want only the first", code, body)
				}
			}
		})
	}
}

// TestEventStreamBeatsThroughAStall holds every stream read of an event
// stream once it has started, as a stalled S3 would: the client still gets
// a comment heartbeat while the read waits.
func TestEventStreamBeatsThroughAStall(t *testing.T) {
	s := newStack(t, hello, turn.Limits{})
	id := s.started(t)
	api := operator.New(operator.Config{Sessions: s.sessions, Agents: func(n string) bool { return n == "demo" },
		Identity:      func(*http.Request) (string, bool) { return "alice", true },
		RequestBudget: time.Minute, StreamHold: time.Minute, Heartbeat: 10 * time.Millisecond})
	srv := httptest.NewServer(api)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a failure bound, not a measure
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/sessions/"+id+"/turns/t1/stream", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	// The stream has started: from now on the store does not answer.
	s.ft.Set(faults.Rule{Op: "s3:", Fault: faults.Stall})
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == ": ping" && len(s.ft.Injected()) > 0 {
			return // a heartbeat while a read is stalled
		}
	}
	t.Fatalf("the stream ended (%v) with no heartbeat", sc.Err())
}
