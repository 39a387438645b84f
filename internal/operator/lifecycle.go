package operator

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// remove is DELETE /sessions/{id}: it deletes the caller's session and
// its child sessions, recursively (see session.Store.Delete), and answers
// 204. A session with an open turn, or with a descendant that has one, is
// refused 409 and left whole: cancel the turn first. The caller deleting
// a session it already deleted is answered 204 again (and finishes a
// delete cut short); anyone else gets 404, as for every route of a deleted
// session.
func (a *api) remove(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := pathID(r, "id", "session")
	if err != nil {
		return err
	}
	for _, sid := range candidates(id, caller) {
		err := a.sessions.Delete(r.Context(), sid, caller, caller)
		switch {
		case err == nil:
			w.WriteHeader(http.StatusNoContent)
			return nil
		case errors.Is(err, session.ErrTurnOpen):
			return httpjson.Refuse(http.StatusConflict, "the session, or one of its child sessions, has an open turn; cancel it (POST /sessions/{id}/cancel) or let it end, then delete")
		case !errors.Is(err, session.ErrNotFound):
			return err
		}
	}
	return httpjson.Refuse(http.StatusNotFound, "session not found")
}

// Export is the answer of GET /sessions/{id}/export: every fact of the
// session and every part of each of its turn streams.
type Export struct {
	Session  string         `json:"session"`
	Exported time.Time      `json:"exported"`
	Facts    []reducer.Fact `json:"facts"`
	Streams  []ExportedTurn `json:"streams"`
}

// ExportedTurn is one turn stream of an export.
type ExportedTurn struct {
	Turn   string         `json:"turn"`
	Closed streams.Status `json:"closed,omitempty"`
	Parts  []parts.Part   `json:"parts"`
}

// export is GET /sessions/{id}/export.
func (a *api) export(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	facts, err := a.sessions.Facts(r.Context(), id, 0)
	if err != nil {
		return err
	}
	maskFacts(caller, facts)
	infos, err := a.sessions.Streams(r.Context(), id)
	if err != nil {
		return err
	}
	out := Export{Session: id, Exported: a.sessions.Clock().UTC(), Facts: facts, Streams: make([]ExportedTurn, 0, len(infos))}
	if out.Facts == nil {
		out.Facts = []reducer.Fact{}
	}
	for _, in := range infos {
		page, err := a.sessions.ReadStream(r.Context(), id, in.ID, "")
		if err != nil {
			return fmt.Errorf("operator: export %s: %w", id, err)
		}
		t := ExportedTurn{Turn: in.ID, Closed: page.Closed, Parts: make([]parts.Part, 0, len(page.Entries))}
		for _, e := range page.Entries {
			t.Parts = append(t.Parts, e.Part)
		}
		out.Streams = append(out.Streams, t)
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}
