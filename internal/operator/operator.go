package operator

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/console"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/mcpserve"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/sessionhttp"
)

// Limits on request content.
const (
	// DefaultMaxBody is the request body limit when Config.MaxBody is 0:
	// 1 MiB, room for a message of MaxText bytes however its JSON escapes
	// it (at worst 6 bytes, \u00XX, per byte of text: 600 KiB), and well
	// within Lambda's 6 MB synchronous payload, base64 included (API
	// Gateway's HTTP API allows 10 MB).
	DefaultMaxBody = 1 << 20
	// MaxText is the longest message text accepted, in bytes of UTF-8:
	// reducer.MaxText, which every message's check (reducer.CheckText)
	// applies, a schedule's text included.
	MaxText = api.MaxText
	// MaxReason is the longest reason accepted with an answer or a cancel.
	MaxReason = api.MaxReason
	// MaxListLimit is the largest page GET /sessions serves.
	MaxListLimit = api.MaxListLimit
)

// pollInterval is how often a held stream read looks for new parts.
const pollInterval = 200 * time.Millisecond

// Config configures the operator API.
type Config struct {
	// Sessions commits and loads sessions, and reads the listings, facts
	// and streams the API serves.
	Sessions *session.Store
	// Agents reports whether an agent name is known. Nil knows none.
	Agents func(name string) bool
	// Identity returns the caller's identity; false answers 401. Nil means
	// ContextIdentity.
	Identity func(*http.Request) (string, bool)
	// MaxBody limits request bodies; 0 means DefaultMaxBody.
	MaxBody int64
	// StreamHold is how long a stream read may wait for new parts of an
	// open stream before answering; 0 answers at once. A JSON read holds
	// at most three quarters of RequestBudget, whatever StreamHold says.
	StreamHold time.Duration
	// RequestBudget bounds how long a request may wait on the session
	// store: one that does not get its answers in time is answered 503
	// with Retry-After, before the front door gives up on it. An event
	// stream spends one budget before it starts and one on each read
	// after. 0 means httpjson.DefaultBudget (20 s).
	RequestBudget time.Duration
	// Heartbeat is how often an event stream sends a comment while it
	// waits; 0 means httpjson.DefaultHeartbeat (15 s).
	Heartbeat time.Duration
	// Log receives request failures; nil discards them.
	Log *slog.Logger
	// Chat configures the AI SDK chat endpoint served under /chat; its
	// AllowedOrigins are the origins the session routes' CORS allows too
	// (see corsPolicy).
	Chat chat.Options
	// MCP serves the MCP endpoint and its protected-resource metadata
	// (internal/mcpserve: mcpserve.Path, mcpserve.MetadataPath); it checks
	// the caller itself. Nil answers 501 (mcpserve.Unserved).
	MCP http.Handler
}

// server is the handler New returns: it routes each request to its route
// group, under the caller's identity and the request budget.
type server struct {
	identity func(*http.Request) (string, bool)
	budget   time.Duration
	log      *slog.Logger
	mux      *http.ServeMux
	cors     httpjson.CORS
}

// groups are the operator API's route groups, each with what it needs.
type groups struct {
	sessions *sessionRoutes
	answers  *answerRoutes
	claims   *claimRoutes
	streams  *streamRoutes
}

// New returns the operator API. Routes:
//
//	POST /sessions                                   create a session → 201
//	GET  /sessions                                   the caller's sessions (?limit=&cursor=)
//	GET  /sessions/{id}                              reduced state
//	DELETE /sessions/{id}                            delete the session and its children → 204 (409 while a turn is open)
//	GET  /sessions/{id}/export                       every fact and turn stream, one JSON bundle
//	POST /sessions/{id}/messages                     post a message → 202
//	GET  /sessions/{id}/facts                        facts after ?after=N
//	GET  /sessions/{id}/turns/{turn}/stream          stream parts after ?after= (JSON or SSE)
//	POST /sessions/{id}/approvals/{approvalId}       approve or deny → 202
//	POST /sessions/{id}/cancel                       cancel the open turn → 202
//	POST /sessions/{id}/wake                         end or move a timer (wait_until) → 202
//	PUT  /sessions/{id}/schedule                     set a schedule {cron, text} → 202
//	DELETE /sessions/{id}/schedule                   clear the schedule → 202
//	POST /sessions/{id}/executions/{executionId}     rerun or abandon → 202
//	POST /sessions/{id}/callbacks/{toolCallId}       complete by hand a call waiting for its callback {output} or {error} → 202
//	POST /sessions/{id}/grants/{grantId}/release     release a grant an ended turn left → 202
//	GET  /claims/orphans                             the caller's orphaned grants (of deleted sessions)
//	POST /claims/orphans/{grantId}/release           release one of them → 202 (404 if none of the caller's)
//	/chat, /chat/{id}/stream, /chat/{id}/stop,
//	/chat/{id}/messages                              the AI SDK chat endpoint (internal/chat)
//	POST /callbacks/{token}                          complete a tool call by its callback token {output} or {error} (no JWT: the token is the credential)
//	POST /callbacks/{token}/heartbeat                renew the callback's heartbeat timeout (no JWT)
//	GET  /console/                                   the web console (static, unauthenticated)
//	POST /mcp, GET /.well-known/oauth-protected-resource[/mcp]
//	                                                 the agents over MCP (internal/mcpserve), with Config.MCP
//
// Every answer but an event stream is JSON; failures are {"error": "..."}.
// A session of another caller is answered 404, like one that does not exist.
func New(c Config) http.Handler {
	budget := c.RequestBudget
	if budget <= 0 {
		budget = httpjson.DefaultBudget
	}
	agents := c.Agents
	if agents == nil {
		agents = func(string) bool { return false }
	}
	identity := c.Identity
	if identity == nil {
		identity = ContextIdentity
	}
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	own := ownership{heads: c.Sessions}
	base := core{ownership: own, sessions: c.Sessions, maxBody: c.MaxBody, log: log}
	if base.maxBody <= 0 {
		base.maxBody = DefaultMaxBody
	}
	g := groups{
		sessions: &sessionRoutes{core: base, agents: agents},
		answers:  &answerRoutes{core: base},
		claims:   &claimRoutes{core: base, orphaned: c.Sessions},
		streams:  &streamRoutes{ownership: own, streams: c.Sessions, log: log, hold: max(c.StreamHold, 0), budget: budget, beat: c.Heartbeat},
	}
	a := &server{identity: identity, budget: budget, log: log, mux: http.NewServeMux(), cors: corsPolicy(c.Chat.AllowedOrigins)}
	for pattern, h := range g.routes() {
		if pattern != streamRoute { // a stream spends its budgets itself
			h = a.budgeted(h)
		}
		a.mux.Handle(pattern, a.authed(h))
	}
	ch := chat.New(chat.Config{Options: c.Chat, Sessions: c.Sessions, Agents: agents, Identity: identity, Log: log,
		Budget: budget, Heartbeat: c.Heartbeat})
	// The callback routes: the token in the path is the credential.
	cb := &callbackRoutes{core: base}
	for pattern, h := range cb.routes() {
		a.mux.Handle(pattern, httpjson.Authed(anyone, a.fail, a.budgeted(h)))
	}
	a.mux.Handle("/chat", ch)
	a.mux.Handle("/chat/", ch)
	// The web console's static assets: no data, so no identity needed.
	web := console.Handler()
	a.mux.Handle("GET "+console.Path, web)
	a.mux.Handle("GET "+console.Path+"/", web)
	m := c.MCP
	if m == nil { // no endpoint: 401 without an identity, else 501
		m = mcpserve.Unserved(mcpserve.Config{Identity: identity})
	}
	for _, p := range []string{mcpserve.Path, mcpserve.MetadataPath, mcpserve.MetadataPath + mcpserve.Path} {
		a.mux.Handle(p, m)
	}
	return a
}

// ServeHTTP routes r, answering unknown routes and methods in JSON. The
// session routes answer CORS (see corsPolicy; internal/chat applies its
// own under /chat): a browser app on an allowed origin calls them too.
func (a *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/sessions" || strings.HasPrefix(r.URL.Path, "/sessions/") {
		if !a.cors.Apply(w, r) {
			return
		}
	}
	httpjson.Serve(w, r, a.mux)
}

// anyone is the identity of a public route's caller: none needed.
func anyone(*http.Request) (string, bool) { return "token", true }

const streamRoute = "GET /sessions/{id}/turns/{turn}/stream"

// budgeted runs h under the request budget: past it, the store calls h is
// waiting on fail with context.DeadlineExceeded, which fail answers 503.
func (a *server) budgeted(h httpjson.Handler) httpjson.Handler {
	return func(w http.ResponseWriter, r *http.Request, caller string) error {
		ctx, cancel := context.WithTimeout(r.Context(), a.budget)
		defer cancel()
		return h(w, r.WithContext(ctx), caller)
	}
}

// authed resolves the caller's identity, answers 401 without one, and
// turns a handler's error into an answer.
func (a *server) authed(h httpjson.Handler) http.Handler {
	return httpjson.Authed(a.identity, a.fail, h)
}

// fail answers err by httpjson's one status table, in the operator API's
// words.
func (a *server) fail(w http.ResponseWriter, r *http.Request, caller string, err error) {
	httpjson.Fail(w, r, a.log, caller, err, operatorWords)
}

var operatorWords = httpjson.Words{
	Known:     sessionhttp.Known("session", "post"),
	Timeout:   "the session store did not answer in time; retry later (under the same Idempotency-Key, a retry of a write that did land is answered as it was)",
	Cancelled: "request cancelled",
	Log:       "operator: request failed",
}
