package turn

import (
	"context"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/claims/claimsession"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// Resource claims around the execution ledger are package claimsession's
// (claimsession.Calls): this file wires them to the invocation, through
// the port claimsession.Turn, and to a session store (GrantFate).

// Released is the reason of the wake a release sends a session it unblocked.
const Released = wake.Released

// newClaims is the claims of the invocation on c.
func newClaims(c *core) *claimsession.Calls {
	return &claimsession.Calls{Broker: c.r.Claims, Waker: c.r.Waker, Log: c.r.log(), Turn: claimsTurn{c}}
}

// claimsTurn is the invocation as its calls' claims see it.
type claimsTurn struct{ *core }

func (c claimsTurn) SessionID() string    { return c.out.Session }
func (c claimsTurn) TurnID() string       { return c.out.Turn }
func (c claimsTurn) State() reducer.State { return c.sess.State }

func (c claimsTurn) Pending() []string {
	var ids []string
	for _, call := range c.rep.Pending() {
		ids = append(ids, call.ID)
	}
	return ids
}

func (c claimsTurn) Append(ctx context.Context, facts ...reducer.Fact) error {
	return c.append(ctx, facts...)
}

func (c claimsTurn) Load(ctx context.Context) (reducer.State, error) {
	sess, err := c.r.Sessions.Load(ctx, c.out.Session)
	if err != nil {
		return reducer.State{}, err
	}
	return sess.State, nil
}

// GrantFate is the broker's Fate for a session store (claimsession.Fate):
// a grant's holder is read from ss, a holder not found is gone, and the
// time is ss's.
func GrantFate(ss *session.Store) func(context.Context, claims.Grant) (claims.Fate, error) {
	return claimsession.Fate(func(ctx context.Context, id string) (reducer.State, error) {
		sess, err := ss.Load(ctx, id)
		if err != nil {
			return reducer.State{}, err
		}
		return sess.State, nil
	}, session.ErrNotFound, ss.Clock)
}
