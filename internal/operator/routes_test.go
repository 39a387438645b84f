package operator_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/operator"
)

// TestRoutesServed: every route of Routes is served (not 404 or 405): one
// that needs an identity answers 401 without one, a public one answers.
func TestRoutesServed(t *testing.T) {
	t.Parallel()
	h := operator.New(operator.Config{Identity: func(*http.Request) (string, bool) { return "", false },
		Chat: chat.Options{AllowedOrigins: []string{"https://app.example"}}})
	for _, rt := range operator.Routes() {
		path := strings.NewReplacer("{proxy+}", "x/y", "{id}", "s_1", "{turn}", "t_1", "{approvalId}", "a_1", "{executionId}", "e_1").Replace(rt.Path)
		r := httptest.NewRequest(rt.Method, path, strings.NewReader("{}"))
		r.Header.Set("Content-Type", "application/json")
		if rt.Method == http.MethodOptions {
			r.Header.Set("Origin", "https://app.example")
			r.Header.Set("Access-Control-Request-Method", "POST")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch {
		case rt.Public && rt.Method == http.MethodOptions:
			if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != "https://app.example" {
				t.Errorf("%s %s: preflight %d %v", rt.Method, path, w.Code, w.Header())
			}
		case rt.Public:
			if w.Code == http.StatusUnauthorized || w.Code == http.StatusMethodNotAllowed {
				t.Errorf("%s %s: public route answered %d", rt.Method, path, w.Code)
			}
		case w.Code != http.StatusUnauthorized:
			t.Errorf("%s %s: %d without an identity, want 401", rt.Method, path, w.Code)
		}
	}
}

// TestOperatorCORS: the session routes a browser app calls answer CORS for
// BATON_CHAT_ORIGINS' origins, as the chat does, and refuse others'
// preflights.
func TestOperatorCORS(t *testing.T) {
	t.Parallel()
	h := operator.New(operator.Config{Identity: func(*http.Request) (string, bool) { return "", false },
		Chat: chat.Options{AllowedOrigins: []string{"https://app.example"}}})
	pre := func(origin, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("OPTIONS", path, nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "authorization, content-type, idempotency-key")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := pre("https://app.example", "/sessions/s_1/approvals/a_1")
	if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "Idempotency-Key") {
		t.Fatalf("allowed preflight: %d %v", w.Code, w.Header())
	}
	if w := pre("https://evil.example", "/sessions/s_1/approvals/a_1"); w.Code != http.StatusForbidden || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("other origin's preflight: %d %v", w.Code, w.Header())
	}
	// The actual request gets the header too, a refusal included (so that
	// the page can read it).
	r := httptest.NewRequest("GET", "/sessions/s_nope", nil)
	r.Header.Set("Origin", "https://app.example")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("GET from an allowed origin: no Access-Control-Allow-Origin: %d %v", rec.Code, rec.Header())
	}
}
