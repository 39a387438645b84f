package session

import (
	"context"
	"fmt"

	"github.com/baton-run/baton/pkg/claims"
	"github.com/baton-run/baton/pkg/reducer"
)

// ReleaseGrant records an operator's release of a grant the session still
// holds after its turn ended (a turn cancelled while the grant's execution
// was uncertain): the operator says its effect is over. The broker frees
// it when it next blocks someone (the holder's facts no longer hold it;
// see turn.GrantFate). A grant not held, or held by the open turn (settle
// its execution instead), fails with ErrNotPending and writes nothing.
func (s *Store) ReleaseGrant(ctx context.Context, id string, actor reducer.Actor, grantID string) error {
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
