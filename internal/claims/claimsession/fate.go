package claimsession

import (
	"context"
	"errors"
	"time"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/pkg/reducer"
)

// Fate is the broker's Fate for a session store: what becomes of a grant
// past its authorization deadline that blocks someone. load reads a
// session's state, failing with an error matching gone when the session
// is not found; now is the store's clock. A grant whose holder still runs
// under a live lease is kept; one the holder's facts do not record (its
// execution never started, or an operator released it) is released; one
// recorded for an execution that is uncertain, or whose turn is over, is
// quarantined; any other is kept for its holder's next invocation to
// settle. A grant whose holder is not found — deleted (its facts, which
// said whether its effect ran, are gone), being deleted, or never found at
// all — is orphaned: no fact can say its effect is over, so it fails
// closed and only an operator's release of the orphan frees it
// (Store.ReleaseOrphan). Nor is a holder of another owner than the grant's
// trusted to speak for it.
func Fate(load func(ctx context.Context, id string) (reducer.State, error), gone error, now func() time.Time) func(context.Context, claims.Grant) (claims.Fate, error) {
	return func(ctx context.Context, g claims.Grant) (claims.Fate, error) {
		st, err := load(ctx, g.Session)
		if errors.Is(err, gone) {
			return claims.Orphan, nil
		}
		if err != nil {
			return claims.Keep, err
		}
		if g.Owner != "" && st.Owner != g.Owner {
			return claims.Orphan, nil
		}
		t := st.Turn
		if st.Status == reducer.Running && t != nil && now().Before(t.Lease) {
			return claims.Keep, nil
		}
		held, ok := st.Grant(g.ID)
		switch {
		case !ok:
			return claims.Release, nil
		case held.Quarantined || t == nil || t.ID != g.Turn:
			return claims.Quarantine, nil
		case t.Uncertain != nil && t.Uncertain.ToolCallID == g.ToolCall:
			return claims.Quarantine, nil
		}
		return claims.Keep, nil
	}
}
