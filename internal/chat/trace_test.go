package chat_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/chat"
)

// TestCORSAllowsTraceparent: a browser app may send a traceparent header,
// so the turn its message starts is traced under the app's trace.
func TestCORSAllowsTraceparent(t *testing.T) {
	t.Parallel()
	h := chat.New(chat.Config{Options: chat.Options{AllowedOrigins: []string{"https://app.example"}}})
	r, _ := http.NewRequest("OPTIONS", "/chat", nil)
	r.Header.Set("Origin", "https://app.example")
	r.Header.Set("Access-Control-Request-Method", "POST")
	r.Header.Set("Access-Control-Request-Headers", "traceparent")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if got := w.Header().Get("Access-Control-Allow-Headers"); w.Code != http.StatusNoContent || !strings.Contains(got, "traceparent") {
		t.Errorf("preflight %d, allowed headers %q: want traceparent among them", w.Code, got)
	}
}
