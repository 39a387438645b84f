package operator

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/httpjson"

	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/console"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
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
	MaxText = reducer.MaxText
	// MaxReason is the longest reason accepted with an answer or a cancel.
	MaxReason = 4 << 10
	// MaxListLimit is the largest page GET /sessions serves.
	MaxListLimit = 100
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
	// Chat configures the AI SDK chat endpoint served under /chat.
	Chat chat.Options
}

// api is the handler New returns.
type api struct {
	sessions *session.Store
	agents   func(string) bool
	identity func(*http.Request) (string, bool)
	maxBody  int64
	hold     time.Duration
	budget   time.Duration
	beat     time.Duration
	log      *slog.Logger
	mux      *http.ServeMux
	chat     chat.Options
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
//	POST /sessions/{id}/grants/{grantId}/release     release a grant an ended turn left → 202
//	GET  /claims/orphans                             the caller's orphaned grants (of deleted sessions)
//	POST /claims/orphans/{grantId}/release           release one of them → 202 (404 if none of the caller's)
//	/chat, /chat/{id}/stream, /chat/{id}/stop,
//	/chat/{id}/messages                              the AI SDK chat endpoint (internal/chat)
//	GET  /console/                                   the web console (static, unauthenticated)
//
// Every answer but an event stream is JSON; failures are {"error": "..."}.
// A session of another caller is answered 404, like one that does not exist.
func New(c Config) http.Handler {
	a := &api{
		sessions: c.Sessions, agents: c.Agents, identity: c.Identity,
		maxBody: c.MaxBody, hold: max(c.StreamHold, 0), budget: c.RequestBudget, beat: c.Heartbeat,
		log: c.Log, mux: http.NewServeMux(),
	}
	if a.budget <= 0 {
		a.budget = httpjson.DefaultBudget
	}
	if a.agents == nil {
		a.agents = func(string) bool { return false }
	}
	if a.identity == nil {
		a.identity = ContextIdentity
	}
	if a.maxBody <= 0 {
		a.maxBody = DefaultMaxBody
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	for pattern, h := range a.routes() {
		if pattern != streamRoute { // a stream spends its budgets itself
			h = a.budgeted(h)
		}
		a.mux.Handle(pattern, a.authed(h))
	}
	a.chat = c.Chat
	ch := chat.New(chat.Config{Options: c.Chat, Sessions: a.sessions, Agents: a.agents, Identity: a.identity, Log: a.log,
		Budget: a.budget, Heartbeat: a.beat})
	a.mux.Handle("/chat", ch)
	a.mux.Handle("/chat/", ch)
	// The web console's static assets: no data, so no identity needed.
	web := console.Handler()
	a.mux.Handle("GET "+console.Path, web)
	a.mux.Handle("GET "+console.Path+"/", web)
	return a
}

// ServeHTTP routes r, answering unknown routes and methods in JSON. The
// session routes answer CORS as the chat does (internal/chat applies it under
// /chat itself): a browser app on an allowed origin calls them too.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/sessions" || strings.HasPrefix(r.URL.Path, "/sessions/") {
		if !a.chat.CORS(w, r) {
			return
		}
	}
	httpjson.Serve(w, r, a.mux)
}

const streamRoute = "GET /sessions/{id}/turns/{turn}/stream"

// budgeted runs h under the request budget: past it, the store calls h is
// waiting on fail with context.DeadlineExceeded, which fail answers 503.
func (a *api) budgeted(h httpjson.Handler) httpjson.Handler {
	return func(w http.ResponseWriter, r *http.Request, caller string) error {
		ctx, cancel := context.WithTimeout(r.Context(), a.budget)
		defer cancel()
		return h(w, r.WithContext(ctx), caller)
	}
}

// authed resolves the caller's identity, answers 401 without one, and
// turns a handler's error into an answer.
func (a *api) authed(h httpjson.Handler) http.Handler { return httpjson.Authed(a.identity, a.fail, h) }

// fail answers err by httpjson's one status table, in the operator API's
// words.
func (a *api) fail(w http.ResponseWriter, r *http.Request, caller string, err error) {
	httpjson.Fail(w, r, a.log, caller, err, operatorWords)
}

var operatorWords = httpjson.Words{
	Noun:      "session",
	Send:      "post",
	Timeout:   "the session store did not answer in time; retry later (under the same Idempotency-Key, a retry of a write that did land is answered as it was)",
	Cancelled: "request cancelled",
	Log:       "operator: request failed",
}

// pathID returns the path value name, or a 404 refusal when it cannot name
// anything stored (empty, too long, or holding control characters).
func pathID(r *http.Request, name, what string) (string, error) {
	v := r.PathValue(name)
	if ids.Check(v) != nil {
		return "", httpjson.Refuse(http.StatusNotFound, "%s not found", what)
	}
	return v, nil
}

// owned finds the caller's session that id names, reading only heads: the
// session of that id when it is the caller's, else the session of the
// caller's chat of that id (see chat.SessionID). It returns the session's
// id and head. Another caller's session is not found.
func (a *api) owned(ctx context.Context, id, caller string) (string, dynamo.Head, error) {
	for _, sid := range candidates(id, caller) {
		h, err := a.sessions.Head(ctx, sid)
		switch {
		case err == nil && h.Owner == caller:
			return sid, h, nil
		case err != nil && !errors.Is(err, dynamo.ErrNotFound):
			return "", dynamo.Head{}, err
		}
	}
	return "", dynamo.Head{}, httpjson.Refuse(http.StatusNotFound, "session not found")
}

// candidates are the sessions a path id may name for caller, in the order
// they are tried: the session of that id, then the caller's chat of it.
func candidates(id, caller string) []string {
	if chat.IsChatID(id) {
		return []string{id, chat.SessionID(caller, id)}
	}
	return []string{id}
}

// ownedID is pathID("id") followed by owned.
func (a *api) ownedID(r *http.Request, caller string) (string, error) {
	id, err := pathID(r, "id", "session")
	if err != nil {
		return "", err
	}
	id, _, err = a.owned(r.Context(), id, caller)
	return id, err
}

func operatorActor(caller string) reducer.Actor {
	return reducer.Actor{Kind: reducer.ActorOperator, ID: caller}
}

func (a *api) create(w http.ResponseWriter, r *http.Request, caller string) error {
	var in struct {
		Agent string `json:"agent"`
	}
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	switch {
	case in.Agent == "":
		return httpjson.Refuse(http.StatusBadRequest, "agent is required")
	case !a.agents(in.Agent):
		return httpjson.Refuse(http.StatusUnprocessableEntity, "unknown agent %q", httpjson.Clip(in.Agent))
	}
	id := ids.New("s")
	answer := func(next reducer.State, _ []reducer.Fact) (reply, error) {
		return newReply(http.StatusCreated, "/sessions/"+id, sessionView(id, next))
	}
	st, err := a.writer(r, answer).Create(r.Context(), id, caller, in.Agent)
	if err != nil {
		return err
	}
	return send(w)(answer(st, nil))
}

func (a *api) list(w http.ResponseWriter, r *http.Request, caller string) error {
	q := r.URL.Query()
	var limit int64
	if s := q.Get("limit"); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 1 || n > MaxListLimit {
			return httpjson.Refuse(http.StatusBadRequest, "limit must be an integer from 1 to %d", MaxListLimit)
		}
		limit = n
	}
	heads, next, err := a.sessions.ByOwner(r.Context(), caller, int32(limit), q.Get("cursor"))
	if errors.Is(err, dynamo.ErrBadCursor) {
		return httpjson.Refuse(http.StatusBadRequest, "cursor is not one this listing returned")
	}
	if err != nil {
		return err
	}
	out := List{Sessions: make([]Summary, 0, len(heads)), Next: next}
	for _, h := range heads {
		if h.Owner == caller { // the index says so; never trust it blindly
			out.Sessions = append(out.Sessions, summaryView(h))
		}
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}

// get answers the session's state (see view for what a running turn's
// usage costs to read).
func (a *api) get(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := pathID(r, "id", "session")
	if err != nil {
		return err
	}
	// The head first: a session being deleted has lost it already, while
	// its facts are still being purged.
	sid, _, err := a.owned(r.Context(), id, caller)
	if err != nil {
		return err
	}
	sess, err := a.sessions.Load(r.Context(), sid)
	switch {
	case err == nil && sess.State.Owner == caller:
		httpjson.Write(w, http.StatusOK, a.view(r.Context(), sid, sess.State))
		return nil
	case err != nil && !errors.Is(err, session.ErrNotFound):
		return err
	}
	return httpjson.Refuse(http.StatusNotFound, "session not found")
}

func (a *api) facts(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var after int64
	if s := r.URL.Query().Get("after"); s != "" {
		after, err = strconv.ParseInt(s, 10, 64)
		if err != nil || after < 0 {
			return httpjson.Refuse(http.StatusBadRequest, "after must be a fact seq: an integer ≥ 0")
		}
	}
	facts, err := a.sessions.Facts(r.Context(), id, after)
	if err != nil {
		return err
	}
	maskFacts(caller, facts)
	if facts == nil {
		facts = []reducer.Fact{}
	}
	httpjson.Write(w, http.StatusOK, Facts{Facts: facts})
	return nil
}

func (a *api) message(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in struct {
		Text string `json:"text"`
	}
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	if err := reducer.CheckText("text", in.Text); err != nil {
		return httpjson.Refuse(http.StatusBadRequest, "%v", err)
	}
	accepted := func(msg string) (reply, error) {
		return newReply(http.StatusAccepted, "", MessageAccepted{MessageID: msg})
	}
	msg, err := a.writer(r, func(_ reducer.State, written []reducer.Fact) (reply, error) {
		return accepted(written[0].Message.ID)
	}).Post(r.Context(), id, operatorActor(caller), in.Text)
	if err != nil {
		return err
	}
	return send(w)(accepted(msg))
}

func checkReason(reason string) error {
	if len(reason) > MaxReason {
		return httpjson.Refuse(http.StatusBadRequest, "reason is %d bytes, longer than the %d allowed", len(reason), MaxReason)
	}
	return nil
}

func (a *api) answer(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	approval, err := pathID(r, "approvalId", "approval")
	if err != nil {
		return err
	}
	var in struct {
		Decision reducer.Decision `json:"decision"`
		Reason   string           `json:"reason"`
	}
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	if err := checkReason(in.Reason); err != nil {
		return err
	}
	answer := always(http.StatusAccepted, Accepted{Status: string(in.Decision)})
	err = a.writer(r, answer).Answer(r.Context(), id, operatorActor(caller), approval, in.Decision, in.Reason)
	switch { // the reducer decides both
	case errors.Is(err, reducer.ErrBadAnswer):
		return httpjson.Refuse(http.StatusBadRequest, "decision must be %q or %q", reducer.Approve, reducer.Deny)
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "approval %q is not pending", httpjson.Clip(approval))
	}
	if err != nil {
		return err
	}
	return send(w)(answer(reducer.State{}, nil))
}

func (a *api) cancel(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in struct {
		Reason string `json:"reason"`
	}
	if err := decode(w, r, a.maxBody, &in, true); err != nil {
		return err
	}
	if err := checkReason(in.Reason); err != nil {
		return err
	}
	answer := always(http.StatusAccepted, Accepted{Status: "cancelled"})
	err = a.writer(r, answer).Cancel(r.Context(), id, operatorActor(caller), in.Reason)
	if errors.Is(err, session.ErrNoTurn) {
		return httpjson.Refuse(http.StatusConflict, "the session has no open turn to cancel")
	}
	if err != nil {
		return err
	}
	return send(w)(answer(reducer.State{}, nil))
}

func (a *api) settle(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	execution, err := pathID(r, "executionId", "execution")
	if err != nil {
		return err
	}
	var in struct {
		Verdict reducer.Verdict `json:"verdict"`
	}
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	answer := always(http.StatusAccepted, Accepted{Status: string(in.Verdict)})
	err = a.writer(r, answer).Settle(r.Context(), id, operatorActor(caller), execution, in.Verdict)
	switch { // the reducer decides both
	case errors.Is(err, reducer.ErrBadAnswer):
		return httpjson.Refuse(http.StatusBadRequest, "verdict must be %q or %q", reducer.Rerun, reducer.Abandon)
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "execution %q awaits no verdict", httpjson.Clip(execution))
	}
	if err != nil {
		return err
	}
	return send(w)(answer(reducer.State{}, nil))
}

// raise sets new spend caps for a turn suspended at a limit, which then
// resumes under them. Zero or absent fields keep the caps they would
// replace; a turn not suspended for a limit is a 409.
func (a *api) raise(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in reducer.Raise
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	answer := always(http.StatusAccepted, Accepted{Status: "raised"})
	err = a.writer(r, answer).Raise(r.Context(), id, operatorActor(caller), in)
	switch {
	case errors.Is(err, session.ErrBadCaps):
		return httpjson.Refuse(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), "session: "))
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "the session has no turn suspended at a spend limit")
	case errors.Is(err, session.ErrCapNotLifted):
		return httpjson.Refuse(http.StatusConflict, "%s", strings.TrimPrefix(err.Error(), "session: "))
	case err != nil:
		return err
	}
	return send(w)(answer(reducer.State{}, nil))
}

// TimerRequest is the body of POST /sessions/{id}/wake: when the turn's
// timer ends. An absent at, or one now or past, ends the wait at once.
type TimerRequest struct {
	At *time.Time `json:"at"`
}

// setTimer moves the end of the wait of a turn suspended on a timer
// (wait_until); a turn not suspended on a timer is a 409.
func (a *api) setTimer(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in TimerRequest
	if err := decode(w, r, a.maxBody, &in, true); err != nil {
		return err
	}
	at := a.sessions.Clock()
	if in.At != nil {
		at = *in.At
	}
	answer := always(http.StatusAccepted, Accepted{Status: "timer set"})
	err = a.writer(r, answer).SetTimer(r.Context(), id, operatorActor(caller), at)
	switch {
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "the session has no turn suspended on a timer")
	case err != nil:
		return err
	}
	return send(w)(answer(reducer.State{}, nil))
}

// ScheduleRequest is the body of PUT /sessions/{id}/schedule: post text at
// each occurrence of cron (five fields, UTC).
type ScheduleRequest struct {
	Cron string `json:"cron"`
	Text string `json:"text"`
}

// setSchedule gives the session a schedule, replacing any.
func (a *api) setSchedule(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in ScheduleRequest
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	answer := always(http.StatusAccepted, Accepted{Status: "scheduled"})
	err = a.writer(r, answer).SetSchedule(r.Context(), id, operatorActor(caller), in.Cron, in.Text)
	switch {
	case errors.Is(err, session.ErrBadSchedule):
		return httpjson.Refuse(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), "session: "))
	case err != nil:
		return err
	}
	return send(w)(answer(reducer.State{}, nil))
}

// clearSchedule removes the session's schedule; none is a 409.
func (a *api) clearSchedule(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	answer := always(http.StatusAccepted, Accepted{Status: "cleared"})
	err = a.writer(r, answer).ClearSchedule(r.Context(), id, operatorActor(caller))
	switch {
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "the session has no schedule")
	case err != nil:
		return err
	}
	return send(w)(answer(reducer.State{}, nil))
}
