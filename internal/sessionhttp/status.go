package sessionhttp

import (
	"errors"
	"github.com/baton-run/baton/internal/callback"
	"net/http"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// Known returns the table of session errors, in an API's words (noun: what
// a session is called, "session" or "chat"; send: the verb for sending a
// message, "post" or "send"): a message text reducer.CheckText refused
// with a 400 saying why, known session errors with 404, 409 or 503 (a
// session too busy to write to in time, with Retry-After 1; a failing
// store). Other errors are not known to it.
func Known(noun, send string) httpjson.Classify {
	return func(err error) *httpjson.Refusal {
		if te, ok := errors.AsType[*reducer.TextError](err); ok {
			return &httpjson.Refusal{Status: http.StatusBadRequest, Msg: te.Error()}
		}
		if te, ok := errors.AsType[*reducer.TransitionError](err); ok && te.Kind == nil {
			return &httpjson.Refusal{Status: http.StatusConflict, Msg: "not allowed now: " + te.Reason}
		}
		for _, row := range conflicts {
			if errors.Is(err, row.err) {
				return &httpjson.Refusal{Status: row.status, Msg: row.msg(noun, send), RetryAfter: row.retryAfter}
			}
		}
		if awsenv.Transient(err) {
			return &httpjson.Refusal{Status: http.StatusServiceUnavailable, Msg: "the session store is throttled or failing; retry later"}
		}
		return nil
	}
}

// conflicts are the known errors, in the order they are tested: ErrBusy
// before ErrConflict, which it wraps.
var conflicts = []struct {
	err        error
	status     int
	msg        func(noun, send string) string
	retryAfter int
}{
	{err: session.ErrNotFound, status: http.StatusNotFound, msg: func(noun, _ string) string { return noun + " not found" }},
	{err: dynamo.ErrNotFound, status: http.StatusNotFound, msg: func(noun, _ string) string { return noun + " not found" }},
	{err: reducer.ErrBadAnswer, status: http.StatusBadRequest, msg: func(_, _ string) string {
		return "a decision must be approve, deny, edit (with input) or respond (with output), a verdict rerun or abandon"
	}},
	{err: session.ErrNotPending, status: http.StatusConflict, msg: func(_, _ string) string { return "nothing of that id is waiting for an answer" }},
	{err: session.ErrNoTurn, status: http.StatusConflict, msg: func(noun, _ string) string { return "the " + noun + " has no open turn" }},
	{err: session.ErrRejected, status: http.StatusConflict, msg: func(noun, send string) string {
		return "the " + noun + "'s agent takes no message while a turn is open; " + send + " it once the turn ends"
	}},
	{err: callback.ErrUnknown, status: http.StatusNotFound, msg: func(_, _ string) string { return "no such callback" }},
	{err: callback.ErrDone, status: http.StatusConflict, msg: func(_, _ string) string { return "the callback already ended: a token completes its call once" }},
	{err: callback.ErrExpired, status: http.StatusGone, msg: func(_, _ string) string {
		return "the callback expired: it timed out, or the turn it was for ended"
	}},
	{err: callback.ErrBadResult, status: http.StatusBadRequest, msg: func(_, _ string) string {
		return `a callback's result is {"output": any JSON value} or {"error": "text"}, one of them`
	}},
	{err: reducer.ErrIllegal, status: http.StatusConflict, msg: func(noun, _ string) string { return "not allowed in the " + noun + "'s current state" }},
	{err: session.ErrReceiptTaken, status: http.StatusConflict, msg: func(_, _ string) string {
		return "a request under this Idempotency-Key is being handled; retry"
	}},
	{err: session.ErrDeleting, status: http.StatusConflict, msg: func(noun, _ string) string {
		return "an earlier " + noun + " of this id is still being deleted; retry once its delete has finished"
	}},
	{err: session.ErrBusy, status: http.StatusServiceUnavailable, retryAfter: 1, msg: func(noun, _ string) string {
		return "the " + noun + " is busy with other writes; nothing was changed; retry"
	}},
	{err: session.ErrConflict, status: http.StatusConflict, msg: func(noun, _ string) string {
		return "the " + noun + " kept changing while this request was handled; retry"
	}},
}
