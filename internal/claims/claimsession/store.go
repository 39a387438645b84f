package claimsession

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/pkg/reducer"
)

// Resource claims as the session store sees them: an operator's release
// of a grant an ended turn left (ReleaseFact), the withdrawal of a blocked
// turn's waiter when the store ends the turn (Withdraw), and the grants a
// delete leaves. A session deleted while it holds a grant (a turn
// cancelled while the grant's execution ran, say) takes with it the facts
// that said whether the grant's effect is over. The delete does not free
// such a grant: before it purges the facts, the store orphans every grant
// they hold (Orphan; claims.Broker.Orphan), which keeps the grant's
// claims, quarantined for good, and lists it among the owner's orphans,
// until an operator who knows the effect is over releases it
// (ReleaseOrphan).

// ErrNoBroker is matched when a session to delete holds grants and the
// store has no claims broker to orphan them in: the delete is refused,
// since purging the facts would lose the only record of the claims.
var ErrNoBroker = errors.New("session: the session holds resource claims and the store has no claims broker")

// Store is a session store's claims: its broker and how it tells what it
// does not return.
type Store struct {
	// Broker is the resource claims broker; nil when the store has none.
	Broker claims.Broker
	// Log receives what is not returned.
	Log *slog.Logger
	// Released wakes a session that a release or a withdrawal unblocked.
	Released func(ctx context.Context, session string)
}

// ReleaseFact is the claim.released of an operator's release of grant
// grantID of a session in state cur: the grant as the session holds it, or
// only its id, for the reducer to refuse (it decides whether the grant may
// be released: not held, or held by the open turn, is ErrNotPending).
func ReleaseFact(cur reducer.State, actor reducer.Actor, grantID string) reducer.Fact {
	g := &claims.Grant{ID: grantID}
	if held, ok := cur.Grant(grantID); ok {
		g = &held
	}
	return reducer.Fact{Type: reducer.ClaimReleased, Actor: actor, Grant: g}
}

// Withdraw takes the waiter of a turn that was suspended as blocked on
// claims, as st (session id's state before the turn ended) holds it, out
// of the broker's queues once the store ended the turn, and wakes the
// sessions that nothing blocks any more (those that waited behind it).
// Without it the waiter would hold up later requests that conflict with
// it until the broker's waiter TTL. Best effort: a failure is logged, and
// the TTL still removes the waiter.
func (s Store) Withdraw(ctx context.Context, id string, st reducer.State) {
	t := st.Turn
	if s.Broker == nil || t == nil || st.Status != reducer.Suspended || t.Cause != reducer.CauseBlocked || t.Block == nil {
		return
	}
	req := claims.Request{ID: claims.GrantID(id, t.Block.ToolCallID), Owner: st.Owner, Session: id, Turn: t.ID,
		ToolCall: t.Block.ToolCallID, Claims: t.Block.Claims}
	ready, err := s.Broker.Withdraw(ctx, req)
	if err != nil {
		s.Log.WarnContext(ctx, "the ended turn's claims waiter is left to expire", "session", id, "waiter", req.ID, "err", err)
		return
	}
	s.released(ctx, ready)
}

func (s Store) released(ctx context.Context, ready []claims.Waiter) {
	for _, w := range ready {
		s.Released(ctx, w.Session)
	}
}

// Orphan orphans, in the broker, every grant session id's facts hold (st,
// its state), before a purge deletes them. It is safe to repeat (a delete
// cut short redoes it). A session that holds grants when the store has no
// broker fails with ErrNoBroker.
func (s Store) Orphan(ctx context.Context, id string, st reducer.State) error {
	if len(st.Grants) == 0 {
		return nil
	}
	if s.Broker == nil {
		return fmt.Errorf("session: delete %s: %d grant(s): %w", id, len(st.Grants), ErrNoBroker)
	}
	for _, g := range st.Grants {
		g.Owner, g.Session = st.Owner, id
		if err := s.Broker.Orphan(ctx, g); err != nil {
			return fmt.Errorf("session: delete %s: orphan grant %s: %w", id, g.ID, err)
		}
		s.Log.InfoContext(ctx, "a deleted session's grant stays held until an operator releases it",
			"session", id, "grant", g.ID, "owner", st.Owner)
	}
	return nil
}

// Orphans lists owner's orphaned grants: those of deleted sessions whose
// effect may still have run, held until an operator releases them. A
// store with no claims broker has none.
func (s Store) Orphans(ctx context.Context, owner string) ([]claims.Grant, error) {
	if s.Broker == nil {
		return nil, nil
	}
	gs, err := s.Broker.Orphans(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("session: orphaned grants of %q: %w", owner, err)
	}
	return gs, nil
}

// ReleaseOrphan releases owner's orphaned grant grantID (an operator says
// its effect is over) and wakes the sessions it blocked that nothing blocks
// any more. A grant that is not an orphan of owner fails with
// claims.ErrNotOrphan and changes nothing.
func (s Store) ReleaseOrphan(ctx context.Context, owner, grantID string) error {
	if s.Broker == nil {
		return fmt.Errorf("session: release grant %s: %w", grantID, claims.ErrNotOrphan)
	}
	ready, err := s.Broker.ReleaseOrphan(ctx, owner, grantID)
	if err != nil {
		return fmt.Errorf("session: release grant %s: %w", grantID, err)
	}
	s.released(ctx, ready)
	return nil
}
