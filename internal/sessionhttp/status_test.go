package sessionhttp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/sessionhttp"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestKnownAnswersSessionErrors: session errors, wrapped as the store
// wraps them, are answered with their status and the API's words; a busy
// session's 503 asks for a retry after 1 s; an error it does not know is
// left to httpjson's table (a 500, or a 503 past the budget).
func TestKnownAnswersSessionErrors(t *testing.T) {
	words := httpjson.Words{Known: sessionhttp.Known("chat", "send"), Timeout: "timeout", Cancelled: "cancelled", Log: "failed"}
	for _, tc := range []struct {
		err        error
		status     int
		msg        string
		retryAfter string
	}{
		{session.ErrNotFound, http.StatusNotFound, "chat not found", ""},
		{session.ErrRejected, http.StatusConflict, "the chat's agent takes no message while a turn is open; send it once the turn ends", ""},
		{reducer.ErrBadAnswer, http.StatusBadRequest, "a decision must be approve, deny, edit (with input) or respond (with output), a verdict rerun or abandon", ""},
		{session.ErrBusy, http.StatusServiceUnavailable, "the chat is busy with other writes; nothing was changed; retry", "1"},
		{context.DeadlineExceeded, http.StatusServiceUnavailable, "timeout", "2"},
		{fmt.Errorf("disk on fire"), http.StatusInternalServerError, "internal error", ""},
	} {
		err := fmt.Errorf("session: post to s1: %w", tc.err)
		status, msg := httpjson.Status(err, nil, words)
		if status != tc.status || msg != tc.msg {
			t.Errorf("%v: %d %q, want %d %q", tc.err, status, msg, tc.status, tc.msg)
		}
		rec := httptest.NewRecorder()
		httpjson.Fail(rec, httptest.NewRequest("GET", "/", nil), discard(), "c", err, words)
		if got := rec.Header().Get("Retry-After"); rec.Code != tc.status || got != tc.retryAfter {
			t.Errorf("%v: answered %d, Retry-After %q; want %d, %q", tc.err, rec.Code, got, tc.status, tc.retryAfter)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
