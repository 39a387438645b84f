package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/wake"
)

// This file holds the grants a delete leaves: a session deleted while it
// holds a grant (a turn cancelled while the grant's execution ran, say)
// takes with it the facts that said whether the grant's effect is over.
// The delete does not free such a grant: before it purges the facts, it
// orphans every grant they hold (claims.Broker.Orphan), which keeps the
// grant's claims, quarantined for good, and lists it among the owner's
// orphans, until an operator who knows the effect is over releases it
// (ReleaseOrphan). Every path to a purge (Delete, a parent's delete, the
// retention sweep) passes through orphanGrants.

// ErrNoBroker is matched when a session to delete holds grants and the
// store has no claims broker to orphan them in: the delete is refused,
// since purging the facts would lose the only record of the claims.
var ErrNoBroker = errors.New("session: the session holds resource claims and the store has no claims broker")

// ErrNotOrphan is matched when a grant to release as an orphan is not one
// of the caller's orphaned grants.
var ErrNotOrphan = claims.ErrNotOrphan

// orphanGrants orphans, in the broker, every grant session id's facts hold,
// before a purge deletes them. It is safe to repeat (a delete cut short
// redoes it), and a session whose facts are gone already has nothing left
// to orphan.
func (s *lifecycle) orphanGrants(ctx context.Context, id string) error {
	sess, err := s.Load(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("session: delete %s: read its grants: %w", id, err)
	}
	st := sess.State
	if len(st.Grants) == 0 {
		return nil
	}
	if s.Claims == nil {
		return fmt.Errorf("session: delete %s: %d grant(s): %w", id, len(st.Grants), ErrNoBroker)
	}
	for _, g := range st.Grants {
		g.Owner, g.Session = st.Owner, id
		if err := s.Claims.Orphan(ctx, g); err != nil {
			return fmt.Errorf("session: delete %s: orphan grant %s: %w", id, g.ID, err)
		}
		s.log().InfoContext(ctx, "a deleted session's grant stays held until an operator releases it",
			"session", id, "grant", g.ID, "owner", st.Owner)
	}
	return nil
}

// Orphans lists owner's orphaned grants: those of deleted sessions whose
// effect may still have run, held until an operator releases them. A
// store with no claims broker has none.
func (s *lifecycle) Orphans(ctx context.Context, owner string) ([]claims.Grant, error) {
	if s.Claims == nil {
		return nil, nil
	}
	gs, err := s.Claims.Orphans(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("session: orphaned grants of %q: %w", owner, err)
	}
	return gs, nil
}

// ReleaseOrphan releases owner's orphaned grant grantID (an operator says
// its effect is over) and wakes the sessions it blocked that nothing blocks
// any more. A grant that is not an orphan of owner fails with ErrNotOrphan
// and changes nothing.
func (s *lifecycle) ReleaseOrphan(ctx context.Context, owner, grantID string) error {
	if s.Claims == nil {
		return fmt.Errorf("session: release grant %s: %w", grantID, ErrNotOrphan)
	}
	ready, err := s.Claims.ReleaseOrphan(ctx, owner, grantID)
	if err != nil {
		return fmt.Errorf("session: release grant %s: %w", grantID, err)
	}
	for _, w := range ready {
		s.wake(ctx, w.Session, wake.Released, 0, 0)
	}
	return nil
}
