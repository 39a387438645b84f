package operator

import (
	"errors"
	"net/http"
	"slices"

	"github.com/baton-run/baton/pkg/claims"
	"github.com/baton-run/baton/pkg/httpjson"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/session"
)

// claimsView is the session's resource claims as the session view shows
// them: the grants its calls hold (never null), and what its open turn is
// blocked on while it is suspended as blocked.
func claimsView(st reducer.State) ([]claims.Grant, *reducer.Block) {
	grants := slices.Clone(st.Grants)
	if grants == nil {
		grants = []claims.Grant{}
	}
	t := st.Turn
	if t == nil || st.Status != reducer.Suspended || t.Cause != reducer.CauseBlocked || t.Block == nil {
		return grants, nil
	}
	b := *t.Block
	return grants, &b
}

// release records an operator's release of a grant the session holds
// after its turn ended (see session.Store.ReleaseGrant): 202, or 409 when
// the grant is not held or belongs to the open turn.
func (a *api) release(w http.ResponseWriter, r *http.Request, caller string) error {
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
	answer := always(http.StatusAccepted, Accepted{Status: "released"})
	err = a.writer(r, answer).ReleaseGrant(r.Context(), id, operatorActor(caller), grant)
	if errors.Is(err, session.ErrNotPending) {
		return httpjson.Refuse(http.StatusConflict, "grant %q is not held by an ended turn of the session: %v", httpjson.Clip(grant), err)
	}
	if err != nil {
		return err
	}
	return send(w)(answer(reducer.State{}, nil))
}
