package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/pkg/dynamo"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds the end of a session's life: Delete buries a session
// and purges what it stored, and Sweep is the retention sweep.

// ErrTurnOpen is matched when a session to delete has an open turn: cancel
// it (or let it end) first. Nothing was deleted.
var ErrTurnOpen = dynamo.ErrTurnOpen

// Delete deletes session id of owner, recording by as who deleted it. It
// first buries the session — writes its tombstone and deletes its head in
// one transaction, so that from then on it is not found by anyone — then
// purges its facts, receipts, turn streams and snapshots, and marks the
// tombstone purged. A delete cut short after the burial is finished by
// calling Delete again (owner's delete of a buried session resumes the
// purge) or by Sweep. It refuses a session with an open turn with
// ErrTurnOpen, and answers ErrNotFound for a session that is not owner's.
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
		return s.purge(ctx, id)
	case err != nil:
		return fmt.Errorf("session: delete %s: %w", id, err)
	case h.Owner != owner:
		return fmt.Errorf("session: delete %s: %w", id, ErrNotFound)
	}
	return s.bury(ctx, h, by)
}

func (s *Store) bury(ctx context.Context, h dynamo.Head, by string) error {
	if err := s.facts.Bury(ctx, h, by, s.now()); err != nil {
		return fmt.Errorf("session: delete %s: %w", h.Session, err)
	}
	return s.purge(ctx, h.Session)
}

// purge removes what a buried session left, then marks its tombstone.
func (s *Store) purge(ctx context.Context, id string) error {
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
// finishes every delete cut short, and deletes the snapshots no fact of
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
		err := s.purge(ctx, t.Session)
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
