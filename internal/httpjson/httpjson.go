package httpjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-run/baton/internal/traceparent"
)

// Refusal is a request refused with its status and a message for the
// client; RetryAfter, when above 0, is the Retry-After it is answered with,
// in seconds.
type Refusal struct {
	Status     int
	Msg        string
	RetryAfter int
}

func (e *Refusal) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Msg) }

// Refuse returns a Refusal with a formatted message.
func Refuse(status int, format string, args ...any) *Refusal {
	return &Refusal{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// ErrorBody is the body of every 4xx and 5xx answer.
type ErrorBody struct {
	Error string `json:"error"`
}

// Write answers v as JSON with status, never cached or sniffed.
func Write(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// The status is sent; a failed write means the client went away.
	_ = json.NewEncoder(w).Encode(v)
}

// Handler is a handler of a known caller; its error is answered by the
// Failer it runs under.
type Handler func(w http.ResponseWriter, r *http.Request, caller string) error

// Failer answers a handler's error.
type Failer func(w http.ResponseWriter, r *http.Request, caller string, err error)

// Authed resolves the caller with identity, answers 401 without one, runs
// h, and answers its error with fail.
func Authed(identity func(*http.Request) (string, bool), fail Failer, h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, ok := identity(r)
		if !ok || caller == "" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			Write(w, http.StatusUnauthorized, ErrorBody{Error: "authentication required"})
			return
		}
		if err := h(w, r, caller); err != nil {
			fail(w, r, caller, err)
		}
	})
}

// Serve serves r with mux, and a request mux has no route for in JSON: 405
// with the mux's Allow header when the path is known under other methods,
// 404 otherwise, instead of the mux's plain text. A valid traceparent
// header is carried in the request's context (package traceparent), so a
// message the request posts starts its turn in the caller's trace; an
// invalid one is ignored, as W3C Trace Context asks.
func Serve(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) {
	if tp := r.Header.Get(traceparent.Header); tp != "" {
		// What the request starts (a turn, for a posted message) is
		// traced under the caller's trace.
		r = r.WithContext(traceparent.With(r.Context(), tp))
	}
	route, pattern := mux.Handler(r)
	if pattern != "" {
		mux.ServeHTTP(w, r)
		return
	}
	probe := &probeWriter{header: http.Header{}}
	route.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		allow := probe.header.Get("Allow")
		w.Header().Set("Allow", allow)
		Write(w, http.StatusMethodNotAllowed, ErrorBody{Error: "method " + r.Method + " not allowed; allowed: " + allow})
		return
	}
	Write(w, http.StatusNotFound, ErrorBody{Error: "no such route: " + r.Method + " " + r.URL.Path})
}

// probeWriter records the status and headers of an answer and drops its
// body.
type probeWriter struct {
	header http.Header
	status int
}

func (p *probeWriter) Header() http.Header { return p.header }
func (p *probeWriter) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return len(b), nil
}
func (p *probeWriter) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

// DescribeJSONError says what is wrong with a body that did not decode, in
// words a client can act on.
func DescribeJSONError(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		return fmt.Sprintf("field %q must be a %s, not a JSON %s", te.Field, te.Type, te.Value)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "malformed JSON: unexpected end of input"
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, se.Error())
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// Clip shortens s, at a rune boundary, for an error message.
func Clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	for i := n; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "…"
		}
	}
	return ""
}

// Wait sleeps poll, or less when deadline is nearer. It reports false when
// the deadline has passed or ctx is done.
func Wait(ctx context.Context, deadline time.Time, poll time.Duration) bool {
	left := time.Until(deadline)
	if left <= 0 {
		return false
	}
	t := time.NewTimer(min(left, poll))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
