package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	lc "github.com/baton-run/baton/internal/lifecycle"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file holds the end of a session's life as the store offers it:
// package lifecycle's Delete, FinishDelete and Sweep on the store's two
// stores, with the hooks they run into the store (lifecycleHooks); the
// grants a delete leaves are orphans.go's.

// ErrTurnOpen is matched when a session to delete, rewind or fork has an
// open turn: cancel it (or let it end) first. Nothing was written.
var ErrTurnOpen = dynamo.ErrTurnOpen

// ErrDeleting is matched when a session is created (Create, or Converse's
// first message) under the id of a deleted session whose delete has not
// finished: nothing was written. Once it has, the id names a new session.
var ErrDeleting = dynamo.ErrDeleting

// lifecycle is the end of sessions' lives (package lifecycle, and
// orphans.go here), over the store's core; a child is reported to its
// parent, and a family's running children cancelled, through the children
// of the store without a receipt (a delete writes no receipt).
type lifecycle struct {
	*core
	kids *children
	life *lc.Lifecycle
}

// newLifecycle is the end of sessions' lives on core c, with kids the
// children of the store without a receipt.
func newLifecycle(c *core, kids *children) lifecycle {
	hooks := lifecycleHooks{&lifecycle{core: c, kids: kids}}
	return lifecycle{core: c, kids: kids, life: lc.New(c.facts, c.streams, hooks)}
}

// Delete deletes session id of owner, and its child sessions with it,
// recursively, recording by as who deleted them (see
// lifecycle.Lifecycle.Delete): it buries the session, then purges its
// children, its facts, receipts, streams and snapshots. It refuses a
// session with an open turn, or with a descendant that has one, with
// ErrTurnOpen, deleting nothing, and answers ErrNotFound for a session
// that is not owner's.
func (s *lifecycle) Delete(ctx context.Context, id, owner, by string) error {
	err := s.life.Delete(ctx, id, owner, by)
	if errors.Is(err, lc.ErrNotFound) {
		return fmt.Errorf("session: delete %s: %w", id, ErrNotFound)
	}
	return err
}

// FinishDelete finishes the delete of buried session id whose purge was
// deferred for an invocation that may still have been running: the tick
// calls it once the tombstone is due (see lifecycle.Lifecycle.FinishDelete).
func (s *lifecycle) FinishDelete(ctx context.Context, id string) error {
	return s.life.FinishDelete(ctx, id)
}

// Sweep is the retention sweep (see lifecycle.Lifecycle.Sweep): it deletes
// every idle session last updated more than retention ago, finishes every
// delete cut short, and deletes the snapshots no fact names once older
// than grace.
func (s *lifecycle) Sweep(ctx context.Context, retention, grace time.Duration) (lc.SweepReport, error) {
	return s.life.Sweep(ctx, retention, grace)
}

// lifecycleHooks is the store as package lifecycle runs into it
// (lifecycle.Sessions): its clock, loads, children and grants.
type lifecycleHooks struct{ s *lifecycle }

func (h lifecycleHooks) Now() time.Time { return h.s.now() }

func (h lifecycleHooks) State(ctx context.Context, id string) (reducer.State, error) {
	sess, err := h.s.Load(ctx, id)
	if err != nil {
		return reducer.State{}, err
	}
	return sess.State, nil
}

func (h lifecycleHooks) Cascade(ctx context.Context, id string) error {
	return h.s.kids.Cascade(ctx, id)
}

func (h lifecycleHooks) Report(ctx context.Context, id string) error { return h.s.kids.Report(ctx, id) }

func (h lifecycleHooks) OrphanGrants(ctx context.Context, id string) error {
	return h.s.orphanGrants(ctx, id)
}

// TellParent commits f, the end of a child that never ran, to its parent
// and wakes the parent; a parent whose turn no longer waits for it, or
// that is gone, needs nothing.
func (h lifecycleHooks) TellParent(ctx context.Context, parent string, f reducer.Fact) error {
	pst, err := h.s.root().transition(ctx, parent, func(reducer.State) (reducer.Fact, error) { return f, nil })
	switch {
	case errors.Is(err, ErrNotPending), errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	h.s.wake(ctx, parent, WakeChildEnded, pst.LastSeq, 0)
	return nil
}
