package claimsession

import (
	"slices"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/pkg/reducer"
)

// View is the session's resource claims as the session view shows them:
// the grants its calls hold (never null), and what its open turn is
// blocked on while it is suspended as blocked, a blocker of another owner
// opaque (claims.Masked: also one a fact recorded before the broker
// masked them).
func View(st reducer.State) ([]claims.Grant, *claims.Block) {
	grants := slices.Clone(st.Grants)
	if grants == nil {
		grants = []claims.Grant{}
	}
	t := st.Turn
	if t == nil || st.Status != reducer.Suspended || t.Cause != reducer.CauseBlocked || t.Block == nil {
		return grants, nil
	}
	b := *t.Block
	b.Blockers = claims.Masked(st.Owner, b.Blockers)
	return grants, &b
}

// MaskFacts masks, in place, the blockers of other owners that facts of a
// session of owner name (see claims.Masked): the runner records them
// masked, but a fact written before it did names them whole.
func MaskFacts(owner string, facts []reducer.Fact) {
	for i, f := range facts {
		if f.Block != nil && len(f.Block.Blockers) > 0 {
			b := *f.Block
			b.Blockers = claims.Masked(owner, b.Blockers)
			facts[i].Block = &b
		}
	}
}
