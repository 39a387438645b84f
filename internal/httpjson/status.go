package httpjson

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// Words are what an API says of the failures every API has, so that each
// API keeps its wording while all answer an error alike; Known is the
// table of the API's own errors.
type Words struct {
	Timeout   string // the message when the store did not answer in time
	Cancelled string // the message when the request was cancelled
	Log       string // the log message of a failed request
	Known     Classify
}

// Classify answers an error an API knows with its refusal, nil for one it
// does not know.
type Classify func(err error) *Refusal

// Status is the one table from an error to its HTTP status and message: a
// refusal as it says, an error w.Known knows as it says, a store that did
// not answer within the request budget a 503, anything else a generic 500.
// reqErr is the request context's error, which makes any failure of a
// cancelled request a 503.
func Status(err, reqErr error, w Words) (int, string) {
	if rf := refusal(err, w); rf != nil {
		return rf.Status, rf.Msg
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, w.Timeout
	case errors.Is(err, context.Canceled), reqErr != nil:
		return http.StatusServiceUnavailable, w.Cancelled
	}
	return http.StatusInternalServerError, "internal error"
}

// refusal is err's refusal, or the one w.Known gives it, or nil.
func refusal(err error, w Words) *Refusal {
	if rf, ok := errors.AsType[*Refusal](err); ok {
		return rf
	}
	if w.Known != nil {
		return w.Known(err)
	}
	return nil
}

// Fail answers err by the Status table, with Retry-After on a 503, and
// logs it (at error level from 500 up, with the detail a client does not
// see).
func Fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, caller string, err error, words Words) {
	status, msg := Status(err, r.Context().Err(), words)
	if rf := refusal(err, words); rf != nil && rf.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(rf.RetryAfter))
	}
	if status == http.StatusServiceUnavailable {
		Unavailable(w)
	}
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	log.Log(r.Context(), level, words.Log, "method", r.Method, "path", LogPath(r.URL.Path),
		"caller", caller, "status", status, "err", err)
	Write(w, status, ErrorBody{Error: msg})
}

// LogPath is a request path as logs may hold it: a callback route's token
// (/callbacks/{token}…), a credential, is left out.
func LogPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/callbacks/")
	if !ok {
		return p
	}
	if _, tail, found := strings.Cut(rest, "/"); found {
		return "/callbacks/{token}/" + tail
	}
	return "/callbacks/{token}"
}
