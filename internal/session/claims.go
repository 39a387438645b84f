package session

import (
	"context"
	"fmt"

	"github.com/baton-run/baton/internal/claims/claimsession"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file wires resource claims into the store (their rules are
// package claimsession's): an operator's release of a grant
// (ReleaseGrant), and the withdrawal of a blocked turn's waiter when the
// store ends the turn (from End).

// claims is the store's claims: its broker, log and wakes.
func (s *core) claims() claimsession.Store {
	return claimsession.Store{Broker: s.Claims, Log: s.log(), Released: func(ctx context.Context, id string) {
		s.wake(ctx, id, wake.Released, 0, 0)
	}}
}

// ReleaseGrant records an operator's release of a grant the session still
// holds after its turn ended (a turn cancelled while the grant's execution
// was uncertain): the operator says its effect is over. The broker frees
// it when it next blocks someone (the holder's facts no longer hold it;
// see claimsession.Fate). A grant not held, or held by the open turn
// (settle its execution instead), fails with ErrNotPending and writes
// nothing.
func (s *ops) ReleaseGrant(ctx context.Context, id string, actor reducer.Actor, grantID string) error {
	_, err := s.transition(ctx, id, func(cur reducer.State) (reducer.Fact, error) {
		return claimsession.ReleaseFact(cur, actor, grantID), nil
	})
	if err != nil {
		return fmt.Errorf("session: release grant %s: %w", grantID, err)
	}
	return nil
}

// withdraw withdraws the waiter of a turn blocked on claims that the store
// ended (see claimsession.Store.Withdraw).
func (s *core) withdraw(ctx context.Context, id string, st reducer.State) {
	s.claims().Withdraw(ctx, id, st)
}
