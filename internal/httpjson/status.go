package httpjson

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// Words are what an API calls the things the status table speaks of, so
// that each API keeps its wording while both answer an error alike.
type Words struct {
	Noun      string // what a session is called: "session", "chat"
	Send      string // the verb for sending a message: "post", "send"
	Timeout   string // the message when the store did not answer in time
	Cancelled string // the message when the request was cancelled
	Log       string // the log message of a failed request
}

// Status is the one table from an error to its HTTP status and message,
// used by the operator API and the chat: a refusal as it says, a message
// text reducer.CheckText refused with a 400 saying why, known
// session errors with 404, 409 or 503 (a session too busy to write to in
// time, a failing store, a store that did not answer within the request
// budget), anything else a generic 500. reqErr is the request context's
// error, which makes any failure of a cancelled request a 503.
func Status(err, reqErr error, w Words) (int, string) {
	if ae, ok := errors.AsType[*Refusal](err); ok {
		return ae.Status, ae.Msg
	}
	if te, ok := errors.AsType[*reducer.TextError](err); ok {
		return http.StatusBadRequest, te.Error()
	}
	if te, ok := errors.AsType[*reducer.TransitionError](err); ok && te.Kind == nil {
		return http.StatusConflict, "not allowed now: " + te.Reason
	}
	for _, row := range conflicts {
		if errors.Is(err, row.err) {
			return row.status, row.msg(w)
		}
	}
	switch {
	case awsenv.Transient(err):
		return http.StatusServiceUnavailable, "the session store is throttled or failing; retry later"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, w.Timeout
	case errors.Is(err, context.Canceled), reqErr != nil:
		return http.StatusServiceUnavailable, w.Cancelled
	}
	return http.StatusInternalServerError, "internal error"
}

// conflicts are the known errors, in the order they are tested: ErrBusy
// before ErrConflict, which it wraps.
var conflicts = []struct {
	err    error
	status int
	msg    func(Words) string
}{
	{session.ErrNotFound, http.StatusNotFound, func(w Words) string { return w.Noun + " not found" }},
	{dynamo.ErrNotFound, http.StatusNotFound, func(w Words) string { return w.Noun + " not found" }},
	{reducer.ErrBadAnswer, http.StatusBadRequest, func(Words) string {
		return "a decision must be approve or deny, a verdict rerun or abandon"
	}},
	{session.ErrNotPending, http.StatusConflict, func(Words) string { return "nothing of that id is waiting for an answer" }},
	{session.ErrNoTurn, http.StatusConflict, func(w Words) string { return "the " + w.Noun + " has no open turn" }},
	{session.ErrRejected, http.StatusConflict, func(w Words) string {
		return "the " + w.Noun + "'s agent takes no message while a turn is open; " + w.Send + " it once the turn ends"
	}},
	{reducer.ErrIllegal, http.StatusConflict, func(w Words) string { return "not allowed in the " + w.Noun + "'s current state" }},
	{session.ErrReceiptTaken, http.StatusConflict, func(Words) string {
		return "a request under this Idempotency-Key is being handled; retry"
	}},
	{session.ErrDeleting, http.StatusConflict, func(w Words) string {
		return "an earlier " + w.Noun + " of this id is still being deleted; retry once its delete has finished"
	}},
	{session.ErrBusy, http.StatusServiceUnavailable, func(w Words) string {
		return "the " + w.Noun + " is busy with other writes; nothing was changed; retry"
	}},
	{session.ErrConflict, http.StatusConflict, func(w Words) string {
		return "the " + w.Noun + " kept changing while this request was handled; retry"
	}},
}

// Fail answers err by the Status table, with Retry-After on a 503, and
// logs it (at error level from 500 up, with the detail a client does not
// see).
func Fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, caller string, err error, words Words) {
	status, msg := Status(err, r.Context().Err(), words)
	if errors.Is(err, session.ErrBusy) {
		w.Header().Set("Retry-After", "1")
	}
	if status == http.StatusServiceUnavailable {
		Unavailable(w)
	}
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	log.Log(r.Context(), level, words.Log, "method", r.Method, "path", r.URL.Path,
		"caller", caller, "status", status, "err", err)
	Write(w, status, ErrorBody{Error: msg})
}
