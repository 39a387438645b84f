package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-run/baton/pkg/awsenv"
	"github.com/baton-run/baton/pkg/dynamo"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/session"
)

// Defaults.
const (
	// DefaultHold bounds how long one response follows a turn.
	DefaultHold = 10 * time.Minute
	// DefaultMaxBody is the request body limit when Config.MaxBody is 0.
	// A chat request carries the client's whole history.
	DefaultMaxBody = 1 << 20
	// MaxText is the longest message text accepted, in bytes.
	MaxText = 100 << 10
	// pollInterval is how often a response looks for new facts and parts.
	pollInterval = 100 * time.Millisecond
)

// Options are the chat endpoint's settings.
type Options struct {
	// DefaultAgent runs chats whose request names no agent; empty makes
	// agent required.
	DefaultAgent string
	// AllowedOrigins are the browser origins CORS lets call the endpoint,
	// exactly as a browser sends Origin ("https://app.example.com"); "*"
	// allows any. None by default.
	AllowedOrigins []string
	// Hold bounds how long one response follows a turn; 0 means
	// DefaultHold.
	Hold time.Duration
}

// ParseOrigins splits a comma-separated list of CORS origins, dropping
// empty entries.
func ParseOrigins(list string) []string {
	var out []string
	for origin := range strings.SplitSeq(list, ",") {
		if origin = strings.TrimSpace(origin); origin != "" {
			out = append(out, origin)
		}
	}
	return out
}

// Config configures the chat endpoint.
type Config struct {
	Options
	// Sessions commits and loads the chats' sessions.
	Sessions *session.Store
	// Agents reports whether an agent name is known. Nil knows none.
	Agents func(name string) bool
	// Identity returns the caller's identity; false answers 401.
	Identity func(*http.Request) (string, bool)
	// MaxBody limits request bodies; 0 means DefaultMaxBody.
	MaxBody int64
	// Log receives request failures; nil means slog.Default().
	Log *slog.Logger
}

type handler struct {
	Config
	mux *http.ServeMux
}

// New returns the chat endpoint. Routes:
//
//	POST /chat                 the AI SDK's chat request → the turn's UI message stream (SSE)
//	GET  /chat/{id}/stream     the open turn's stream from its start, or 204 when none is open
//	POST /chat/{id}/stop       cancel the open turn → 202
//
// A chat's id is its session's id: the operator API's session routes
// accept it. Failures are JSON {"error": "..."} with a 4xx or 5xx status,
// and a refused request writes nothing.
func New(c Config) http.Handler {
	h := &handler{Config: c, mux: http.NewServeMux()}
	if h.Agents == nil {
		h.Agents = func(string) bool { return false }
	}
	if h.Identity == nil {
		h.Identity = func(*http.Request) (string, bool) { return "", false }
	}
	if h.MaxBody <= 0 {
		h.MaxBody = DefaultMaxBody
	}
	if h.Hold <= 0 {
		h.Hold = DefaultHold
	}
	if h.Log == nil {
		h.Log = slog.Default()
	}
	h.mux.Handle("POST /chat", h.authed(h.post))
	h.mux.Handle("GET /chat/{id}/stream", h.authed(h.resume))
	h.mux.Handle("POST /chat/{id}/stop", h.authed(h.stop))
	return h
}

// ServeHTTP answers CORS preflights and routes the rest.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cors(w, r) {
		return
	}
	route, pattern := h.mux.Handler(r)
	if pattern != "" {
		h.mux.ServeHTTP(w, r)
		return
	}
	// The mux's own answer is 404, or 405 with Allow, in plain text: keep
	// its status and Allow header, and say it in JSON.
	probe := &probeWriter{header: http.Header{}}
	route.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		allow := probe.header.Get("Allow")
		w.Header().Set("Allow", allow)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "method " + r.Method + " not allowed; allowed: " + allow})
		return
	}
	writeJSON(w, http.StatusNotFound, errorBody{Error: "no such route: " + r.Method + " " + r.URL.Path})
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

func (h *handler) authed(f func(http.ResponseWriter, *http.Request, string) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, ok := h.Identity(r)
		if !ok || caller == "" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeJSON(w, http.StatusUnauthorized, errorBody{Error: "authentication required"})
			return
		}
		if err := f(w, r, caller); err != nil {
			h.fail(w, r, caller, err)
		}
	})
}

type errorBody struct {
	Error string `json:"error"`
}

// apiError is a refusal with its status and a message for the client.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.status, e.msg) }

func refuse(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// fail answers err: a refusal as it says, known session errors with 404,
// 409 or 503, anything else with a generic 500 whose detail is logged.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, caller string, err error) {
	status, msg := http.StatusInternalServerError, "internal error"
	switch ae, isAPI := errors.AsType[*apiError](err); {
	case isAPI:
		status, msg = ae.status, ae.msg
	case errors.Is(err, session.ErrNotFound), errors.Is(err, dynamo.ErrNotFound):
		status, msg = http.StatusNotFound, "chat not found"
	case errors.Is(err, session.ErrNotPending):
		status, msg = http.StatusConflict, "nothing of that id is waiting for an answer"
	case errors.Is(err, session.ErrNoTurn):
		status, msg = http.StatusConflict, "the chat has no open turn"
	case errors.Is(err, reducer.ErrIllegal):
		status, msg = http.StatusConflict, "not allowed in the chat's current state"
	case errors.Is(err, session.ErrConflict):
		status, msg = http.StatusConflict, "the chat kept changing while this request was handled; retry"
	case awsenv.Transient(err):
		status, msg = http.StatusServiceUnavailable, "the session store is throttled or failing; retry later"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), r.Context().Err() != nil:
		status, msg = http.StatusServiceUnavailable, "request cancelled or timed out; retry"
	}
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	h.Log.Log(r.Context(), level, "chat: request failed", "method", r.Method, "path", r.URL.Path,
		"caller", caller, "status", status, "err", err)
	writeJSON(w, status, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// clip shortens s for an error message.
func clip(s string) string {
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

// validID reports whether s is of the form chat and message ids must have:
// 1 to 128 ASCII letters, digits, '_' or '-', starting with a letter or
// digit. The AI SDK's generated ids are.
func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// owned checks that chat id exists and belongs to caller. Another
// caller's chat is not found.
func (h *handler) owned(ctx context.Context, r *http.Request, caller string) (string, dynamo.Head, error) {
	id := r.PathValue("id")
	if !validID(id) {
		return "", dynamo.Head{}, refuse(http.StatusNotFound, "chat not found")
	}
	hd, err := h.Sessions.Facts.Head(ctx, id)
	if err != nil {
		return "", dynamo.Head{}, err
	}
	if hd.Owner != caller {
		return "", dynamo.Head{}, refuse(http.StatusNotFound, "chat not found")
	}
	return id, hd, nil
}

func (h *handler) stop(w http.ResponseWriter, r *http.Request, caller string) error {
	id, _, err := h.owned(r.Context(), r, caller)
	if err != nil {
		return err
	}
	err = h.Sessions.Cancel(r.Context(), id, reducer.Actor{Kind: reducer.ActorOperator, ID: caller}, "stopped from the chat")
	if errors.Is(err, session.ErrNoTurn) {
		return refuse(http.StatusConflict, "the chat has no running turn to stop")
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, struct {
		Status string `json:"status"`
	}{"cancelled"})
	return nil
}
