package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/claims/claimsession"
)

// This file wires the grants a delete leaves into the store (their rules
// are package claimsession's): before a purge deletes a session's facts,
// every grant they hold is orphaned (orphanGrants), held until an operator
// releases it (ReleaseOrphan). Every path to a purge (Delete, a parent's
// delete, the retention sweep) passes through orphanGrants.

// ErrNoBroker is matched when a session to delete holds grants and the
// store has no claims broker to orphan them in: the delete is refused,
// since purging the facts would lose the only record of the claims.
var ErrNoBroker = claimsession.ErrNoBroker

// ErrNotOrphan is matched when a grant to release as an orphan is not one
// of the caller's orphaned grants.
var ErrNotOrphan = claims.ErrNotOrphan

// orphanGrants orphans, in the broker, every grant session id's facts hold,
// before a purge deletes them (claimsession.Store.Orphan). A session whose
// facts are gone already has nothing left to orphan.
func (s *lifecycle) orphanGrants(ctx context.Context, id string) error {
	sess, err := s.Load(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("session: delete %s: read its grants: %w", id, err)
	}
	return s.claims().Orphan(ctx, id, sess.State)
}

// Orphans lists owner's orphaned grants (claimsession.Store.Orphans).
func (s *lifecycle) Orphans(ctx context.Context, owner string) ([]claims.Grant, error) {
	return s.claims().Orphans(ctx, owner)
}

// ReleaseOrphan releases owner's orphaned grant grantID, waking the
// sessions it blocked (claimsession.Store.ReleaseOrphan).
func (s *lifecycle) ReleaseOrphan(ctx context.Context, owner, grantID string) error {
	return s.claims().ReleaseOrphan(ctx, owner, grantID)
}
