package operator

import (
	"slices"

	"github.com/baton-run/baton/pkg/claims"
	"github.com/baton-run/baton/pkg/reducer"
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
