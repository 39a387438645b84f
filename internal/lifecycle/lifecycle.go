package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds the end of a session's life: Delete buries a session
// and its child sessions and purges what they stored, FinishDelete ends a
// purge that waited for a fence, and Sweep is the retention sweep.

// ErrTurnOpen is matched when a session to delete has an open turn: cancel
// it (or let it end) first. Nothing was deleted.
var ErrTurnOpen = dynamo.ErrTurnOpen

// ErrConflict is matched when the head of a session to delete changed
// under the delete, every try.
var ErrConflict = dynamo.ErrConflict

// ErrNotFound is matched when the session to delete is not the owner's
// (or there is none): nothing was deleted.
var ErrNotFound = errors.New("lifecycle: no such session of the owner")

// Delete deletes session id of owner, and its child sessions with it,
// recursively, recording by as who deleted them. It first buries the
// session — writes its tombstone and deletes its head in one transaction,
// so that from then on it is not found by anyone — then deletes each
// child the same way (tombstone, then purge), and only then purges the
// session's facts, receipts, turn streams and snapshots, and marks the
// tombstone purged: the facts that name the children outlive them. A
// delete cut short after the burial is finished by calling Delete again
// (owner's delete of a buried session resumes the purge, children first)
// or by Sweep; one that waits for a cancelled invocation's lease (see purge)
// is finished by the tick (FinishDelete). A child session is reported to
// its parent first (reportFirst). It refuses a session with an open turn, or with a child
// (or deeper descendant) that has one, with ErrTurnOpen, deleting nothing;
// children its ended turns left running are cancelled first (Sessions.Cascade). It
// answers ErrNotFound for a session that is not owner's. A delete that
// loses a race to another delete of the session answers as the repeated
// delete does; one that raced any other write reads the session again.
func (s *Lifecycle) Delete(ctx context.Context, id, owner, by string) error {
	var err error
	for range deleteTries {
		if err = s.deleteOnce(ctx, id, owner, by); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return err
}

// deleteTries is how often Delete reads the session again after its head
// changed under it.
const deleteTries = 4

// deleteOnce is one try of Delete, from reading the head.
func (s *Lifecycle) deleteOnce(ctx context.Context, id, owner, by string) error {
	h, err := s.facts.Head(ctx, id)
	switch {
	case errors.Is(err, dynamo.ErrNotFound):
		t, terr := s.facts.Tombstone(ctx, id)
		if errors.Is(terr, dynamo.ErrNotFound) || (terr == nil && t.Owner != owner) {
			return fmt.Errorf("lifecycle: delete %s: %w", id, ErrNotFound)
		}
		if terr != nil {
			return fmt.Errorf("lifecycle: delete %s: %w", id, terr)
		}
		return s.purge(ctx, t)
	case err != nil:
		return fmt.Errorf("lifecycle: delete %s: %w", id, err)
	case h.Owner != owner:
		return fmt.Errorf("lifecycle: delete %s: %w", id, ErrNotFound)
	case h.Why == reducer.ReasonCascade && h.Turn == "":
		// Its ended turn's children still run: stop them, then delete.
		if err := s.sessions.Cascade(ctx, id); err != nil {
			return fmt.Errorf("lifecycle: delete %s: %w", id, err)
		}
		if h, err = s.facts.Head(ctx, id); err != nil {
			return fmt.Errorf("lifecycle: delete %s: %w", id, err)
		}
	}
	if h, err = s.reportFirst(ctx, h); err != nil {
		return err
	}
	return s.bury(ctx, h, by)
}

// reportFirst tells the parent of child session h, before the child is
// deleted, what became of the child, if the parent's turn may still wait
// for it: deleted first, the child would leave its parent suspended for
// it with nothing to wake it. A child whose turn ended but has not
// reported it (reducer.ReasonReport, after a crash between its end and
// its report) reports it (Sessions.Report); one that never ran a turn (idle with
// its task waiting) is recorded as ended, cancelled by its delete
// (abandonChild). It returns the child's head after that; a report that
// fails fails the delete, which deleted nothing.
func (s *Lifecycle) reportFirst(ctx context.Context, h dynamo.Head) (dynamo.Head, error) {
	switch h.Why {
	case reducer.ReasonReport:
		if err := s.sessions.Report(ctx, h.Session); err != nil {
			return h, fmt.Errorf("lifecycle: delete %s: report its end to its parent first: %w", h.Session, err)
		}
	case reducer.ReasonInbox:
		st, err := s.sessions.State(ctx, h.Session)
		if err != nil {
			return h, fmt.Errorf("lifecycle: delete %s: %w", h.Session, err)
		}
		if st.Parent == nil || st.Turns > 0 {
			return h, nil
		}
		if err := s.abandonChild(ctx, h.Session, st); err != nil {
			return h, err
		}
		return h, nil // the child's own facts are unchanged
	default:
		return h, nil
	}
	h, err := s.facts.Head(ctx, h.Session)
	if err != nil {
		return h, fmt.Errorf("lifecycle: delete %s: %w", h.Session, err)
	}
	return h, nil
}

// abandonChild records in the parent of child session id (in state st),
// which never ran a turn, that the child ended, cancelled by its delete,
// and wakes the parent (Sessions.TellParent). A parent whose turn no longer waits for it, or
// that is gone, needs nothing.
func (s *Lifecycle) abandonChild(ctx context.Context, id string, st reducer.State) error {
	p := st.Parent
	c := reducer.Child{ID: id, ToolCallID: p.ToolCallID, Agent: st.Agent, Status: reducer.TurnCancelled,
		Error: "the child session was deleted before it ran"}
	f := reducer.Fact{Type: reducer.ChildEnded, Actor: reducer.Actor{Kind: reducer.ActorSystem, ID: "delete"}, Turn: p.Turn, Child: &c}
	if err := s.sessions.TellParent(ctx, p.Session, f); err != nil {
		return fmt.Errorf("lifecycle: delete %s: tell its parent %s first: %w", id, p.Session, err)
	}
	return nil
}

// bury buries the session of head h, once none of its family has an open
// turn, and purges it and its family.
func (s *Lifecycle) bury(ctx context.Context, h dynamo.Head, by string) error {
	if h.Turn != "" {
		return fmt.Errorf("lifecycle: delete %s: %w", h.Session, ErrTurnOpen)
	}
	if err := s.familyIdle(ctx, h.Session); err != nil {
		return err
	}
	if err := s.facts.Bury(ctx, h, by, s.sessions.Now()); err != nil {
		return fmt.Errorf("lifecycle: delete %s: %w", h.Session, err)
	}
	return s.purge(ctx, dynamo.Tombstone{Session: h.Session, Owner: h.Owner, By: by})
}

// familyIdle checks that no descendant of session id has an open turn.
// It reads each one's facts and head: a delete's cost, paid once.
func (s *Lifecycle) familyIdle(ctx context.Context, id string) error {
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
			return fmt.Errorf("lifecycle: delete %s: child %s: %w", id, k, err)
		case h.Turn != "":
			return fmt.Errorf("lifecycle: delete %s: its child session %s has an open turn: %w", id, k, ErrTurnOpen)
		}
		if err := s.familyIdle(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// childIDs are the child sessions session id's turns started, in order,
// as its child.started facts name them.
func (s *Lifecycle) childIDs(ctx context.Context, id string) ([]string, error) {
	facts, err := s.facts.Facts(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: delete %s: list its children: %w", id, err)
	}
	return childIDsIn(facts), nil
}

// children are the child sessions that facts' child.started name, in order.
func childIDsIn(facts []reducer.Fact) []string {
	var out []string
	for _, f := range facts {
		if f.Type == reducer.ChildStarted && f.Child != nil && !slices.Contains(out, f.Child.ID) {
			out = append(out, f.Child.ID)
		}
	}
	return out
}

// purge removes what the buried session of tombstone t left — its
// children first, each buried (as t.By) and purged in turn, then its own
// facts, receipts, streams and snapshots, once its grants are orphaned in
// the claims broker (Sessions.OrphanGrants) — and marks its tombstone purged.
//
// An invocation whose turn was ended under it (a cancel) may still run:
// it learns of the end only when its next chunk write finds the chunk
// taken, by the close the cancel wrote; deleted, that chunk would let the
// write land again, and the invocation go on calling the model and tools
// for a deleted session. So while such an invocation's lease holds (see
// fence), the last chunk of its stream stays, and the tombstone, marked
// with the lease and the stream (Log.DeferPurge), waits in the due
// index for the tick to finish the purge (FinishDelete) once the lease has
// passed; the retention sweep or a repeated Delete finish it too. The
// fence is a chunk of the cancel's: a finish part, nothing of the
// conversation.
func (s *Lifecycle) purge(ctx context.Context, t dynamo.Tombstone) error {
	id := t.Session
	facts, err := s.facts.Facts(ctx, id, 0)
	if err != nil {
		return fmt.Errorf("lifecycle: delete %s: list its children: %w", id, err)
	}
	for _, k := range childIDsIn(facts) {
		if err := s.deleteChild(ctx, k, t.By); err != nil {
			return fmt.Errorf("lifecycle: delete %s: %w", id, err)
		}
	}
	now := s.sessions.Now()
	until, fenced := fence(facts, now)
	if until.After(now) && (until.After(t.Fence) || !subset(fenced, t.Fenced)) {
		// Recorded before the facts that say it go.
		if err := s.facts.DeferPurge(ctx, id, until, fenced); err != nil {
			return fmt.Errorf("lifecycle: delete %s: %w", id, err)
		}
	}
	if t.Fence.After(until) {
		until = t.Fence
	}
	if !until.After(now) {
		fenced = nil
	} else {
		fenced = union(fenced, t.Fenced)
	}
	// The grants its facts hold stay held, orphaned, before the facts go
	// (Sessions.OrphanGrants): a deleted holder never frees a claim.
	if err := s.sessions.OrphanGrants(ctx, id); err != nil {
		return err
	}
	if _, err := s.facts.Purge(ctx, id); err != nil {
		return fmt.Errorf("lifecycle: delete %s: %w", id, err)
	}
	if _, err := s.deleteObjects(ctx, id, fenced); err != nil {
		return fmt.Errorf("lifecycle: delete %s: %w", id, err)
	}
	if len(fenced) > 0 {
		return nil // the tick finishes it once the lease has passed
	}
	if err := s.facts.MarkPurged(ctx, id, s.sessions.Now()); err != nil {
		return fmt.Errorf("lifecycle: delete %s: %w", id, err)
	}
	return nil
}

// fence finds, in a buried session's facts, the turns that someone other
// than their runner ended (an operator's cancel, a parent's cascade) while
// an invocation ran them, whose invocation's lease has not passed at now:
// that invocation may still be running. It returns the latest of those
// leases and the turns' streams.
func fence(facts []reducer.Fact, now time.Time) (until time.Time, streams []string) {
	var stream string
	var lease time.Time
	running := false
	for _, f := range facts {
		switch {
		case f.Type == reducer.TurnStarted:
			stream, lease, running = f.Stream, f.Lease, true
		case f.Type == reducer.TurnResumed:
			lease, running = f.Lease, true
		case f.Type == reducer.TurnSuspended:
			running = false
		case f.Ends():
			own := f.Actor.Kind == reducer.ActorAgent && f.Actor.ID == f.Turn
			if running && !own && lease.After(now) && stream != "" {
				streams = append(streams, stream)
				if lease.After(until) {
					until = lease
				}
			}
			running = false
		}
	}
	return until, streams
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// FinishDelete finishes the delete of buried session id whose purge was
// deferred for an invocation that may still have been running (see purge):
// the tick calls it once the tombstone is due. A session not buried, or
// purged already, needs nothing.
func (s *Lifecycle) FinishDelete(ctx context.Context, id string) error {
	t, err := s.facts.Tombstone(ctx, id)
	switch {
	case errors.Is(err, dynamo.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("lifecycle: finish the delete of %s: %w", id, err)
	case t.Purged:
		return nil
	}
	return s.purge(ctx, t)
}

// deleteChild deletes child session id of a buried parent: it buries it
// if it has a head, and finishes its purge if its tombstone is not marked
// purged. A child never created leaves nothing to delete.
func (s *Lifecycle) deleteChild(ctx context.Context, id, by string) error {
	h, err := s.facts.Head(ctx, id)
	switch {
	case err == nil:
		return s.bury(ctx, h, by)
	case !errors.Is(err, dynamo.ErrNotFound):
		return fmt.Errorf("lifecycle: delete child %s: %w", id, err)
	}
	t, err := s.facts.Tombstone(ctx, id)
	switch {
	case errors.Is(err, dynamo.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("lifecycle: delete child %s: %w", id, err)
	case t.Purged:
		return nil
	}
	return s.purge(ctx, t)
}

// SweepReport counts what a Sweep did.
type SweepReport struct {
	// Expired is the sessions deleted for being idle past the retention.
	Expired int
	// Finished is the deletes cut short that the sweep finished.
	Finished int
	// Orphans is the snapshots deleted that no fact names.
	Orphans int
	// Files is the files deleted whose session does not exist: uploads
	// into a chat whose first message never came.
	Files int
}

// Sweep is the retention sweep: it deletes (as "retention") every idle
// session last updated more than retention ago (none when retention is 0),
// with its child sessions (a family with an open turn is left for a later
// sweep), finishes every delete cut short, and deletes the snapshots no fact of
// their session names once older than grace — those a compaction or an
// ending wrote before its fact lost its race or never landed (a snapshot is
// written before its fact, so a younger one may be in flight). It scans the
// table and lists the bucket once each: run it rarely.
func (s *Lifecycle) Sweep(ctx context.Context, retention, grace time.Duration) (SweepReport, error) {
	var rep SweepReport
	now := s.sessions.Now()
	var before time.Time
	if retention > 0 {
		before = now.Add(-retention)
	}
	err := s.facts.Sweep(ctx, before, func(h dynamo.Head) error {
		h, err := s.reportFirst(ctx, h)
		if err == nil {
			err = s.bury(ctx, h, "retention")
		}
		if errors.Is(err, ErrTurnOpen) || errors.Is(err, ErrConflict) {
			return nil // it came back to life meanwhile
		}
		if err == nil {
			rep.Expired++
		}
		return err
	}, func(t dynamo.Tombstone) error {
		err := s.purge(ctx, t)
		if err == nil {
			rep.Finished++
		}
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("lifecycle: sweep: %w", err)
	}
	if rep.Orphans, err = s.sweepSnapshots(ctx, now.Add(-grace)); err != nil {
		return rep, err
	}
	rep.Files, err = s.sweepFiles(ctx, now.Add(-grace))
	return rep, err
}

// sweepFiles deletes the files written before cutoff whose session has
// no head: a chat's upload whose first message never came (a session's
// delete removes its own), and returns how many. It reads one head per
// session that has files.
func (s *Lifecycle) sweepFiles(ctx context.Context, cutoff time.Time) (int, error) {
	n := 0
	var session string
	var gone bool
	err := s.objects.Files(ctx, func(o streams.SnapshotObject) error {
		if !o.Modified.Before(cutoff) {
			return nil
		}
		if o.Session != session {
			_, err := s.facts.Head(ctx, o.Session)
			if err != nil && !errors.Is(err, dynamo.ErrNotFound) {
				return err
			}
			session, gone = o.Session, err != nil
		}
		if !gone {
			return nil
		}
		if err := s.objects.DeleteObject(ctx, o.Key); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("lifecycle: sweep files: %w", err)
	}
	return n, nil
}

// sweepSnapshots deletes the snapshots written before cutoff that no fact
// of their session names, and returns how many.
func (s *Lifecycle) sweepSnapshots(ctx context.Context, cutoff time.Time) (int, error) {
	n := 0
	var session string
	var named map[string]bool
	err := s.objects.Snapshots(ctx, func(o streams.SnapshotObject) error {
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
		if err := s.objects.DeleteObject(ctx, o.Key); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("lifecycle: sweep snapshots: %w", err)
	}
	return n, nil
}
