package operator

import (
	"errors"
	"github.com/baton-run/baton/internal/idempotency"
	"net/http"
	"strconv"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// sessionRoutes are the routes of sessions themselves: create, list, view,
// facts, messages, export and delete.
type sessionRoutes struct {
	core
	agents func(string) bool
}

func (a *sessionRoutes) create(w http.ResponseWriter, r *http.Request, caller string) error {
	var in api.CreateRequest
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
	answer := func(next reducer.State, _ []reducer.Fact) (idempotency.Reply, error) {
		return idempotency.NewReply(http.StatusCreated, "/sessions/"+id, sessionView(id, next))
	}
	store, built := a.writer(r, answer)
	st, err := store.Create(r.Context(), id, caller, in.Agent)
	if err != nil {
		return err
	}
	return idempotency.Send(w, built, answer, st, nil)
}

func (a *sessionRoutes) list(w http.ResponseWriter, r *http.Request, caller string) error {
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
	out := api.List{Sessions: make([]api.Summary, 0, len(heads)), Next: next}
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
func (a *sessionRoutes) get(w http.ResponseWriter, r *http.Request, caller string) error {
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

func (a *sessionRoutes) facts(w http.ResponseWriter, r *http.Request, caller string) error {
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
	httpjson.Write(w, http.StatusOK, api.Facts{Facts: facts})
	return nil
}

func (a *sessionRoutes) message(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := pathID(r, "id", "session")
	if err != nil {
		return err
	}
	id, head, err := a.owned(r.Context(), id, caller)
	if err != nil {
		return err
	}
	var in api.MessageRequest
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	if err := reducer.CheckMessage("text", reducer.Message{Text: in.Text, Files: make([]reducer.File, len(in.Files))}); err != nil {
		return httpjson.Refuse(http.StatusBadRequest, "%v", err)
	}
	// The files are checked, then stored, before the message is written.
	refs, err := chat.Ingest(r.Context(), a.sessions, id, head.Agent, in.Files)
	if err != nil {
		return err
	}
	accepted := func(msg string) (idempotency.Reply, error) {
		return idempotency.NewReply(http.StatusAccepted, "", api.MessageAccepted{MessageID: msg})
	}
	store, built := a.writer(r, func(_ reducer.State, written []reducer.Fact) (idempotency.Reply, error) {
		return accepted(written[0].Message.ID)
	})
	msg, err := store.PostMessage(r.Context(), id, operatorActor(caller), reducer.Message{Text: in.Text, Files: refs})
	if err != nil {
		return err
	}
	return idempotency.Send(w, built, func(reducer.State, []reducer.Fact) (idempotency.Reply, error) { return accepted(msg) }, reducer.State{}, nil)
}
