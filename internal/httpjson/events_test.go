package httpjson_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/httpjson"
)

// TestStartUIStreamHeaders: a UI message stream is answered 200 with the
// event-stream headers, and the extra ones asked for.
func TestStartUIStreamHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	ev := httpjson.StartUIStream(rec, time.Hour, "Connection", "keep-alive")
	ev.Close()
	want := map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "Connection": "keep-alive",
		"X-Accel-Buffering": "no", "X-Vercel-AI-UI-Message-Stream": "v1"}
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200", rec.Code)
	}
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
}
