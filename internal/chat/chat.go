package chat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/httpjson"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/sessionhttp"
	"github.com/baton-run/baton/pkg/reducer"
)

// Defaults.
const (
	// DefaultHold bounds how long one response follows a turn.
	DefaultHold = 10 * time.Minute
	// DefaultMaxBody is the request body limit when Config.MaxBody is 0.
	// A chat request carries the client's whole history.
	DefaultMaxBody = 1 << 20
	// MaxText is the longest message text accepted, in bytes: the one
	// bound of every message's text (reducer.MaxText, reducer.CheckText).
	MaxText = reducer.MaxText
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
	// Log receives request failures; nil discards them.
	Log *slog.Logger
	// Budget bounds how long a request waits on the session store before
	// its answer starts (and each read of a stream after): past it the
	// request is answered 503 with Retry-After. 0 means
	// httpjson.DefaultBudget.
	Budget time.Duration
	// Heartbeat is how often a stream sends a comment while it waits; 0
	// means httpjson.DefaultHeartbeat.
	Heartbeat time.Duration
}

type handler struct {
	Config
	mux *http.ServeMux
}

// New returns the chat endpoint. Routes:
//
//	POST /chat                 the AI SDK's chat request → the turn's UI message stream (SSE)
//	GET  /chat/{id}/stream     the open turn's stream from its start, or 204 when none is open
//	                           (or the chat does not exist for the caller)
//	POST /chat/{id}/stop       cancel the open turn → 202
//	GET  /chat/{id}/messages   the chat's messages as UIMessage[] ([] for a chat the caller has not)
//
// A chat id is the caller's own: its session's id is SessionID(caller,
// chat id), and the operator API's session routes accept the chat id for
// its owner. Failures are JSON {"error": "..."} with a 4xx or 5xx status,
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
	if h.Budget <= 0 {
		h.Budget = httpjson.DefaultBudget
	}
	if h.Log == nil {
		h.Log = slog.New(slog.DiscardHandler)
	}
	for pattern, f := range h.routes() {
		h.mux.Handle(pattern, h.authed(f))
	}
	return h
}

// ServeHTTP answers CORS preflights and routes the rest.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cors(w, r) {
		httpjson.Serve(w, r, h.mux)
	}
}

func (h *handler) authed(f httpjson.Handler) http.Handler {
	return httpjson.Authed(h.Identity, h.fail, f)
}

// fail answers err by httpjson's one status table, in the chat's words.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, caller string, err error) {
	httpjson.Fail(w, r, h.Log, caller, err, chatWords)
}

var chatWords = httpjson.Words{
	Known:     sessionhttp.Known("chat", "send"),
	Timeout:   "request cancelled, or the session store did not answer in time; retry",
	Cancelled: "request cancelled, or the session store did not answer in time; retry",
	Log:       "chat: request failed",
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

// SessionID is the id of the session behind caller's chat chatID: a hash
// of the two, so chat ids are the caller's own. Two callers using one chat
// id get two chats, and no caller can find, take or block another's.
func SessionID(caller, chatID string) string {
	sum := sha256.Sum256([]byte("baton chat\x00" + caller + "\x00" + chatID))
	return sessionPrefix + hex.EncodeToString(sum[:16])
}

// sessionPrefix starts the id of every chat's session.
const sessionPrefix = "chat_"

// IsChatID reports whether s has the form of a chat id, which SessionID
// maps to a session.
func IsChatID(s string) bool { return validID(s) }

// owned checks that the caller's chat named by the path exists, and
// returns its session's id and head. Another caller's chat of that id is
// another chat.
func (h *handler) owned(ctx context.Context, r *http.Request, caller string) (string, dynamo.Head, error) {
	chatID := r.PathValue("id")
	if !validID(chatID) {
		return "", dynamo.Head{}, httpjson.Refuse(http.StatusNotFound, "chat not found")
	}
	id := SessionID(caller, chatID)
	hd, err := h.Sessions.Head(ctx, id)
	if err != nil {
		return "", dynamo.Head{}, err
	}
	if hd.Owner != caller {
		return "", dynamo.Head{}, httpjson.Refuse(http.StatusNotFound, "chat not found")
	}
	return id, hd, nil
}

// budgeted is ctx bounded by the request budget, for the store calls made
// before an answer starts.
func (h *handler) budgeted(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, h.Budget)
}

// notFound reports whether err says the chat does not exist for the
// caller: no such chat, or another caller's.
func notFound(err error) bool {
	if ae, ok := errors.AsType[*httpjson.Refusal](err); ok {
		return ae.Status == http.StatusNotFound
	}
	return errors.Is(err, session.ErrNotFound) || errors.Is(err, dynamo.ErrNotFound)
}

func (h *handler) stop(w http.ResponseWriter, r *http.Request, caller string) error {
	ctx, cancel := h.budgeted(r.Context())
	defer cancel()
	id, _, err := h.owned(ctx, r, caller)
	if err != nil {
		return err
	}
	err = h.Sessions.Cancel(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: caller}, "stopped from the chat")
	if errors.Is(err, session.ErrNoTurn) {
		return httpjson.Refuse(http.StatusConflict, "the chat has no running turn to stop")
	}
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusAccepted, struct {
		Status string `json:"status"`
	}{"cancelled"})
	return nil
}
