package operator

import (
	"context"
	"errors"
	"github.com/baton-run/baton/internal/idempotency"
	"net/http"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/claims/claimsession"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// claimRoutes are the routes of resource claims: releasing a grant an
// ended turn left, and listing and releasing the caller's orphaned grants.
type claimRoutes struct {
	core
	orphaned interface {
		Orphans(ctx context.Context, owner string) ([]claims.Grant, error)
		ReleaseOrphan(ctx context.Context, owner, grantID string) error
	}
}

// release records an operator's release of a grant the session holds
// after its turn ended (see session.Store.ReleaseGrant): 202, or 409 when
// the grant is not held or belongs to the open turn.
func (a *claimRoutes) release(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	grant, err := pathID(r, "grantId", "grant")
	if err != nil {
		return err
	}
	var in struct{}
	if err := decode(w, r, a.maxBody, &in, true); err != nil {
		return err
	}
	answer := idempotency.Always(http.StatusAccepted, api.Accepted{Status: "released"})
	store, built := a.writer(r, answer)
	err = store.ReleaseGrant(r.Context(), id, operatorActor(caller), grant)
	if errors.Is(err, session.ErrNotPending) {
		return httpjson.Refuse(http.StatusConflict, "grant %q is not held by an ended turn of the session: %v", httpjson.Clip(grant), err)
	}
	if err != nil {
		return err
	}
	return idempotency.Send(w, built, answer, reducer.State{}, nil)
}

// maskFacts masks the blockers of other owners that facts of a session
// of owner name (claimsession.MaskFacts).
func maskFacts(owner string, facts []reducer.Fact) { claimsession.MaskFacts(owner, facts) }

// orphans lists the caller's orphaned grants (see session.Store.Orphans).
func (a *claimRoutes) orphans(w http.ResponseWriter, r *http.Request, caller string) error {
	gs, err := a.orphaned.Orphans(r.Context(), caller)
	if err != nil {
		return err
	}
	if gs == nil {
		gs = []claims.Grant{}
	}
	httpjson.Write(w, http.StatusOK, api.Orphans{Orphans: gs})
	return nil
}

// releaseOrphan releases one of the caller's orphaned grants once its
// effect is over (see session.Store.ReleaseOrphan), waking the sessions it
// blocked: 202, or 404 when it is no orphan of the caller's (another
// owner's, released already, or never orphaned).
func (a *claimRoutes) releaseOrphan(w http.ResponseWriter, r *http.Request, caller string) error {
	grant, err := pathID(r, "grantId", "grant")
	if err != nil {
		return err
	}
	var in struct{}
	if err := decode(w, r, a.maxBody, &in, true); err != nil {
		return err
	}
	err = a.orphaned.ReleaseOrphan(r.Context(), caller, grant)
	if errors.Is(err, session.ErrNotOrphan) {
		return httpjson.Refuse(http.StatusNotFound, "no orphaned grant %q of yours (released already, or never orphaned)", httpjson.Clip(grant))
	}
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusAccepted, api.Accepted{Status: "released"})
	return nil
}
