package session

import (
	"context"
	"fmt"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file holds resource claims as the store sees them: an operator's
// release of a grant (ReleaseGrant), and the withdrawal of a blocked
// turn's waiter when the store ends the turn (withdraw, from End).

// ReleaseGrant records an operator's release of a grant the session still
// holds after its turn ended (a turn cancelled while the grant's execution
// was uncertain): the operator says its effect is over. The broker frees
// it when it next blocks someone (the holder's facts no longer hold it;
// see turn.GrantFate). A grant not held, or held by the open turn (settle
// its execution instead), fails with ErrNotPending and writes nothing.
func (s *ops) ReleaseGrant(ctx context.Context, id string, actor reducer.Actor, grantID string) error {
	_, err := s.transition(ctx, id, func(cur reducer.State) (reducer.Fact, error) {
		g := &claims.Grant{ID: grantID} // the reducer decides whether it may be released
		if held, ok := cur.Grant(grantID); ok {
			g = &held
		}
		return reducer.Fact{Type: reducer.ClaimReleased, Actor: actor, Grant: g}, nil
	})
	if err != nil {
		return fmt.Errorf("session: release grant %s: %w", grantID, err)
	}
	return nil
}

// withdraw takes the waiter of a turn that was suspended as blocked on
// claims, as st holds it, out of the broker's queues once the store ended
// the turn, and wakes the sessions that nothing blocks any more (those
// that waited behind it). Without it the waiter would hold up later
// requests that conflict with it until the broker's waiter TTL. Best
// effort: a failure is logged, and the TTL still removes the waiter.
func (s *core) withdraw(ctx context.Context, id string, st reducer.State) {
	t := st.Turn
	if s.Claims == nil || t == nil || st.Status != reducer.Suspended || t.Cause != reducer.CauseBlocked || t.Block == nil {
		return
	}
	req := claims.Request{ID: claims.GrantID(id, t.Block.ToolCallID), Owner: st.Owner, Session: id, Turn: t.ID,
		ToolCall: t.Block.ToolCallID, Claims: t.Block.Claims}
	ready, err := s.Claims.Withdraw(ctx, req)
	if err != nil {
		s.log().WarnContext(ctx, "the ended turn's claims waiter is left to expire", "session", id, "waiter", req.ID, "err", err)
		return
	}
	for _, w := range ready {
		s.wake(ctx, w.Session, wake.Released, 0, 0)
	}
}
