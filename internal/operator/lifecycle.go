package operator

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// remove is DELETE /sessions/{id}: it deletes the caller's session and
// its child sessions, recursively (see session.Store.Delete), and answers
// 204. A session with an open turn, or with a descendant that has one, is
// refused 409 and left whole: cancel the turn first. The caller deleting
// a session it already deleted is answered 204 again (and finishes a
// delete cut short); anyone else gets 404, as for every route of a deleted
// session.
func (a *sessionRoutes) remove(w http.ResponseWriter, r *http.Request, caller string) error {
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

// export is GET /sessions/{id}/export.
func (a *sessionRoutes) export(w http.ResponseWriter, r *http.Request, caller string) error {
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
	out := api.Export{Session: id, Exported: a.sessions.Clock().UTC(), Facts: facts, Streams: make([]api.ExportedTurn, 0, len(infos))}
	if out.Facts == nil {
		out.Facts = []reducer.Fact{}
	}
	for _, in := range infos {
		page, err := a.sessions.ReadStream(r.Context(), id, in.ID, "")
		if err != nil {
			return fmt.Errorf("operator: export %s: %w", id, err)
		}
		t := api.ExportedTurn{Turn: in.ID, Closed: string(page.Closed), Parts: make([]api.Part, 0, len(page.Entries))}
		for _, e := range page.Entries {
			t.Parts = append(t.Parts, e.Part)
		}
		out.Streams = append(out.Streams, t)
	}
	if out.Files, err = a.exportFiles(r.Context(), id, out); err != nil {
		return fmt.Errorf("operator: export %s: %w", id, err)
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}
