package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/baton-run/baton/pkg/dynamo"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds the end of a session's life: Delete buries a session
// and its child sessions and purges what they stored, and Sweep is the
// retention sweep.

// ErrTurnOpen is matched when a session to delete has an open turn: cancel
// it (or let it end) first. Nothing was deleted.
var ErrTurnOpen = dynamo.ErrTurnOpen

// Delete deletes session id of owner, and its child sessions with it,
// recursively, recording by as who deleted them. It first buries the
// session — writes its tombstone and deletes its head in one transaction,
// so that from then on it is not found by anyone — then deletes each
// child the same way (tombstone, then purge), and only then purges the
// session's facts, receipts, turn streams and snapshots, and marks the
// tombstone purged: the facts that name the children outlive them. A
// delete cut short after the burial is finished by calling Delete again
// (owner's delete of a buried session resumes the purge, children first)
// or by Sweep. It refuses a session with an open turn, or with a child
// (or deeper descendant) that has one, with ErrTurnOpen, deleting nothing;
// children its ended turns left running are cancelled first (Cascade). It
// answers ErrNotFound for a session that is not owner's.
func (s *Store) Delete(ctx context.Context, id, owner, by string) error {
	h, err := s.facts.Head(ctx, id)
	switch {
	case errors.Is(err, dynamo.ErrNotFound):
		t, terr := s.facts.Tombstone(ctx, id)
		if errors.Is(terr, dynamo.ErrNotFound) || (terr == nil && t.Owner != owner) {
			return fmt.Errorf("session: delete %s: %w", id, ErrNotFound)
		}
		if terr != nil {
			return fmt.Errorf("session: delete %s: %w", id, terr)
		}
		return s.purge(ctx, id, by)
	case err != nil:
		return fmt.Errorf("session: delete %s: %w", id, err)
	case h.Owner != owner:
		return fmt.Errorf("session: delete %s: %w", id, ErrNotFound)
	case h.Why == reducer.ReasonCascade && h.Turn == "":
		// Its ended turn's children still run: stop them, then delete.
		if err := s.root().Cascade(ctx, id); err != nil {
			return fmt.Errorf("session: delete %s: %w", id, err)
		}
		if h, err = s.facts.Head(ctx, id); err != nil {
			return fmt.Errorf("session: delete %s: %w", id, err)
		}
	}
	return s.bury(ctx, h, by)
}

// bury buries the session of head h, once none of its family has an open
// turn, and purges it and its family.
func (s *Store) bury(ctx context.Context, h dynamo.Head, by string) error {
	if h.Turn != "" {
		return fmt.Errorf("session: delete %s: %w", h.Session, ErrTurnOpen)
	}
	if err := s.familyIdle(ctx, h.Session); err != nil {
		return err
	}
	if err := s.facts.Bury(ctx, h, by, s.now()); err != nil {
		return fmt.Errorf("session: delete %s: %w", h.Session, err)
	}
	return s.purge(ctx, h.Session, by)
}

// familyIdle checks that no descendant of session id has an open turn.
// It reads each one's facts and head: a delete's cost, paid once.
func (s *Store) familyIdle(ctx context.Context, id string) error {
	kids, err := s.childIDs(ctx, id)
	if err != nil {
		return err
	}
	for _, k := range kids {
		h, err := s.facts.Head(ctx, k)
		switch {
		case errors.Is(err, dynamo.ErrNotFound):
			continue // never created, or buried already: purge finishes it
		case err != nil:
			return fmt.Errorf("session: delete %s: child %s: %w", id, k, err)
		case h.Turn != "":
			return fmt.Errorf("session: delete %s: its child session %s has an open turn: %w", id, k, ErrTurnOpen)
		}
		if err := s.familyIdle(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// childIDs are the child sessions session id's turns started, in order,
// as its child.started facts name them.
func (s *Store) childIDs(ctx context.Context, id string) ([]string, error) {
	facts, err := s.facts.Facts(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("session: delete %s: list its children: %w", id, err)
	}
	var out []string
	for _, f := range facts {
		if f.Type == reducer.ChildStarted && f.Child != nil && !slices.Contains(out, f.Child.ID) {
			out = append(out, f.Child.ID)
		}
	}
	return out, nil
}

// purge removes what a buried session left — its children first, each
// buried (as by) and purged in turn, then, once its grants are orphaned in
// the claims broker (orphanGrants), its own facts, receipts, streams and
// snapshots — and marks its tombstone purged.
func (s *Store) purge(ctx context.Context, id, by string) error {
	kids, err := s.childIDs(ctx, id)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := s.deleteChild(ctx, k, by); err != nil {
			return fmt.Errorf("session: delete %s: %w", id, err)
		}
	}
	// The grants its facts hold stay held, orphaned, before the facts go
	// (orphans.go): a deleted holder never frees a claim.
	if err := s.orphanGrants(ctx, id); err != nil {
		return err
	}
	if _, err := s.facts.Purge(ctx, id); err != nil {
		return fmt.Errorf("session: delete %s: %w", id, err)
	}
	if _, err := s.streams.DeleteSession(ctx, id); err != nil {
		return fmt.Errorf("session: delete %s: %w", id, err)
	}
	if err := s.facts.MarkPurged(ctx, id, s.now()); err != nil {
		return fmt.Errorf("session: delete %s: %w", id, err)
	}
	return nil
}

// deleteChild deletes child session id of a buried parent: it buries it
// if it has a head, and finishes its purge if its tombstone is not marked
// purged. A child never created leaves nothing to delete.
func (s *Store) deleteChild(ctx context.Context, id, by string) error {
	h, err := s.facts.Head(ctx, id)
	switch {
	case err == nil:
		return s.bury(ctx, h, by)
	case !errors.Is(err, dynamo.ErrNotFound):
		return fmt.Errorf("session: delete child %s: %w", id, err)
	}
	t, err := s.facts.Tombstone(ctx, id)
	switch {
	case errors.Is(err, dynamo.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("session: delete child %s: %w", id, err)
	case t.Purged:
		return nil
	}
	return s.purge(ctx, id, by)
}

// SweepReport counts what a Sweep did.
type SweepReport struct {
	// Expired is the sessions deleted for being idle past the retention.
	Expired int
	// Finished is the deletes cut short that the sweep finished.
	Finished int
	// Orphans is the snapshots deleted that no fact names.
	Orphans int
}

// Sweep is the retention sweep: it deletes (as "retention") every idle
// session last updated more than retention ago (none when retention is 0),
// with its child sessions (a family with an open turn is left for a later
// sweep), finishes every delete cut short, and deletes the snapshots no fact of
// their session names once older than grace — those a compaction or an
// ending wrote before its fact lost its race or never landed (a snapshot is
// written before its fact, so a younger one may be in flight). It scans the
// table and lists the bucket once each: run it rarely.
func (s *Store) Sweep(ctx context.Context, retention, grace time.Duration) (SweepReport, error) {
	var rep SweepReport
	now := s.now()
	var before time.Time
	if retention > 0 {
		before = now.Add(-retention)
	}
	err := s.facts.Sweep(ctx, before, func(h dynamo.Head) error {
		err := s.bury(ctx, h, "retention")
		if errors.Is(err, ErrTurnOpen) || errors.Is(err, ErrConflict) {
			return nil // it came back to life meanwhile
		}
		if err == nil {
			rep.Expired++
		}
		return err
	}, func(t dynamo.Tombstone) error {
		err := s.purge(ctx, t.Session, t.By)
		if err == nil {
			rep.Finished++
		}
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("session: sweep: %w", err)
	}
	rep.Orphans, err = s.sweepSnapshots(ctx, now.Add(-grace))
	return rep, err
}

// sweepSnapshots deletes the snapshots written before cutoff that no fact
// of their session names, and returns how many.
func (s *Store) sweepSnapshots(ctx context.Context, cutoff time.Time) (int, error) {
	n := 0
	var session string
	var named map[string]bool
	err := s.streams.Snapshots(ctx, func(o streams.SnapshotObject) error {
		if !o.Modified.Before(cutoff) {
			return nil
		}
		if o.Session != session {
			facts, err := s.facts.Facts(ctx, o.Session, 0)
			if err != nil {
				return err
			}
			session, named = o.Session, map[string]bool{}
			for _, f := range facts {
				if f.Snapshot != "" {
					named[f.Snapshot] = true
				}
			}
		}
		if named[o.Key] {
			return nil
		}
		if err := s.streams.DeleteObject(ctx, o.Key); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("session: sweep snapshots: %w", err)
	}
	return n, nil
}
