package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/dynamo"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/wake"
)

// Errors callers can tell apart.
var (
	// ErrNotFound: no such session.
	ErrNotFound = errors.New("session: not found")
	// ErrConflict: another writer committed first; reload and decide again.
	ErrConflict = dynamo.ErrConflict
	// ErrNotPending: the approval or execution named is not waiting for an answer.
	ErrNotPending = errors.New("session: not pending")
	// ErrNoTurn: the session has no open turn.
	ErrNoTurn = errors.New("session: no open turn")
)

// Snapshot is the conversation and state as a turn ended.
type Snapshot struct {
	Session  string                 `json:"session"`
	State    reducer.State          `json:"state"`
	Messages []conversation.Message `json:"messages"`
}

// Session is a session rebuilt from durable state.
type Session struct {
	ID    string
	State reducer.State
	// History is the conversation of the ended turns.
	History []conversation.Message
}

// Store loads and commits sessions.
type Store struct {
	Facts   *dynamo.Store
	Streams *streams.Store
	// Waker, when set, is told after commits that need a turn to run.
	Waker wake.Waker
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Clock returns the store's current time, in UTC.
func (s *Store) Clock() time.Time { return s.now() }

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Load rebuilds a session in a bounded number of requests: the facts back to
// the newest snapshot, and that snapshot. It does not read the open turn's
// stream.
func (s *Store) Load(ctx context.Context, id string) (*Session, error) {
	facts, err := s.Facts.Tail(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("session: load %s: %w", id, err)
	}
	if len(facts) == 0 {
		return nil, fmt.Errorf("session: load %s: %w", id, ErrNotFound)
	}
	sess := &Session{ID: id}
	base := reducer.State{}
	if snap := facts[0]; snap.Snapshot != "" {
		var sn Snapshot
		if err := s.Streams.GetSnapshot(ctx, snap.Snapshot, &sn); err != nil {
			return nil, fmt.Errorf("session: load %s: snapshot at %d: %w", id, snap.Seq, err)
		}
		if err := checkSnapshot(id, snap, sn); err != nil {
			return nil, fmt.Errorf("session: load %s: snapshot at %d: %w", id, snap.Seq, err)
		}
		base, sess.History = sn.State, sn.Messages
		facts = facts[1:]
	}
	st, err := base.Apply(facts...)
	if err != nil {
		return nil, fmt.Errorf("session: load %s: %w", id, err)
	}
	sess.State = st
	return sess, nil
}

// Append checks facts against st with the reducer, numbers and times them,
// and writes them in one compare-and-set. It returns the new state, a
// *reducer.TransitionError for an illegal fact, or an error matching
// ErrConflict when another writer got there first. Nothing is written unless
// everything is.
func (s *Store) Append(ctx context.Context, id string, st reducer.State, facts ...reducer.Fact) (reducer.State, error) {
	now := s.now()
	for i := range facts {
		facts[i].Seq = st.LastSeq + 1 + int64(i)
		if facts[i].Time.IsZero() {
			facts[i].Time = now
		}
	}
	next, err := st.Apply(facts...)
	if err != nil {
		return reducer.State{}, err
	}
	if err := s.Facts.Append(ctx, id, next, facts...); err != nil {
		return reducer.State{}, fmt.Errorf("session: append to %s: %w", id, err)
	}
	return next, nil
}

// End appends a fact that ends the open turn, with a snapshot of the
// conversation as it ends. turn is the open turn's replayed stream. The
// snapshot is written first under a key no other writer uses; if the fact
// loses its race the snapshot is simply never referenced.
func (s *Store) End(ctx context.Context, sess *Session, turn conversation.Turn, f reducer.Fact) (reducer.State, error) {
	st := sess.State
	if st.Turn == nil {
		return reducer.State{}, ErrNoTurn
	}
	if !f.Ends() {
		return reducer.State{}, fmt.Errorf("session: %s does not end a turn", f.Type)
	}
	outcome := map[reducer.Type]string{reducer.TurnCompleted: "completed", reducer.TurnFailed: "failed", reducer.TurnCancelled: "cancelled"}[f.Type]
	f.Seq = st.LastSeq + 1
	if f.Time.IsZero() {
		f.Time = s.now()
	}
	f.Snapshot = streams.SnapshotKey(sess.ID, f.Seq)
	next, err := st.Apply(f)
	if err != nil {
		return reducer.State{}, err
	}
	snap := Snapshot{Session: sess.ID, State: next, Messages: conversation.Close(sess.History, st.Turn.Messages, turn, outcome)}
	if err := s.Streams.PutSnapshot(ctx, f.Snapshot, snap); err != nil {
		return reducer.State{}, fmt.Errorf("session: snapshot %s: %w", sess.ID, err)
	}
	if err := s.Facts.Append(ctx, sess.ID, next, f); err != nil {
		return reducer.State{}, fmt.Errorf("session: end turn of %s: %w", sess.ID, err)
	}
	sess.State = next
	sess.History = snap.Messages
	return next, nil
}

// retry runs a load-decide-append cycle again when it lost a race, a few
// times, for transitions that stay legal whoever else commits (a message, an
// answer to one of several approvals).
func retry(ctx context.Context, f func() error) error {
	var err error
	for range 8 {
		if err = f(); !errors.Is(err, ErrConflict) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return err
}
