package operator

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// core is what the route groups that write share: the session store they
// write through (with Idempotency-Key receipts), the request body limit
// and the log, and the checks that a path names a session of the caller's.
type core struct {
	ownership
	sessions *session.Store
	maxBody  int64
	log      *slog.Logger
}

// ownership checks that a path names a session of the caller's, reading
// only sessions' heads.
type ownership struct {
	heads interface {
		Head(ctx context.Context, id string) (dynamo.Head, error)
	}
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
func (a *ownership) owned(ctx context.Context, id, caller string) (string, dynamo.Head, error) {
	for _, sid := range candidates(id, caller) {
		h, err := a.heads.Head(ctx, sid)
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
func (a *ownership) ownedID(r *http.Request, caller string) (string, error) {
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
