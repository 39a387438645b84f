package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	retrypkg "github.com/baton-run/baton/internal/retry"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds the store itself: New builds it on its two stores, and
// Load, Append, End and Compact rebuild a session and commit its
// transitions (with Clock, the store's time).

// Errors callers can tell apart.
var (
	// ErrNotFound: no such session.
	ErrNotFound = errors.New("session: not found")
	// ErrConflict: another writer committed first; reload and decide again.
	ErrConflict = dynamo.ErrConflict
	// ErrNotPending: the approval or execution named is not waiting for an answer.
	// It is the reducer's: the reducer alone decides it.
	ErrNotPending = reducer.ErrNotPending
	// ErrBadCaps: spend caps that are negative, not finite, or set nothing.
	ErrBadCaps = errors.New("session: bad caps")
	// ErrCapNotLifted: a raise that leaves the spend cap the turn reached
	// at or under its usage, so the turn could not go on.
	ErrCapNotLifted = errors.New("session: the raise does not lift the cap the turn reached")
	// ErrBadSchedule: a schedule whose cron reducer.CheckCron refuses or
	// whose text reducer.CheckText refuses.
	ErrBadSchedule = errors.New("session: bad schedule")
	// ErrNoTurn: the session has no open turn.
	ErrNoTurn = errors.New("session: no open turn")
	// ErrReceiptTaken: the request's idempotency key was used before;
	// nothing was written.
	ErrReceiptTaken = dynamo.ErrReceiptTaken
	// ErrRejected: the session's agent refuses messages while a turn is
	// open (the reject steering policy); nothing was written.
	ErrRejected = errors.New("session: the agent takes no message while a turn is open")
	// ErrBusy: other writers kept winning the session's compare-and-set
	// for as long as a request may take; nothing was written. Try again.
	ErrBusy = errors.New("session: busy with other writes")
)

// Snapshot is the conversation and state as a turn ended, or as a running
// turn compacted the history (see Compact).
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

// Store loads and commits sessions, and runs the operations on them. It
// is built on a fact log and a stream store (New), reached only through
// its small core (a turn's sinks write their chunks through the stream
// store too, so an interceptor sees them): loading and committing (Load, Append, End, Compact and
// Follow, session.go; retrying a write that lost its race, retry.go), over
// the two stores' reads (read.go), turn streams (stream.go) and usage
// (usage.go). Each feature is its own type over that core, embedded here
// so that its methods are the store's: the operator's operations (ops:
// ops.go, chat.go, claims.go), children (internal/children, children.go) and lifecycle
// (lifecycle.go, orphans.go).
type Store struct {
	*core
	ops
	children
	lifecycle
}

// Config is what a store is set up with besides its two stores. Set its
// fields on the store (store.Waker = ...) before first use; a copy of the
// store (WithReceipt, Decorate) copies it whole.
type Config struct {
	// Waker, when set, is told after commits that need a turn to run.
	Waker wake.Waker
	// Now is the clock of the store and of the runner, worker and tick
	// built on it; nil is the wall clock.
	Now clock.Clock
	// Steering, when set, gives an agent's policy for a message that
	// arrives while a turn is open (see deliver); nil or "" is enqueue.
	Steering func(agent string) reducer.Steering
	// CheckInput, when set, checks an operator's edit of a call (Answer
	// with reducer.Edit) against the schema of the agent's tool; an edit
	// it refuses fails with reducer.ErrBadAnswer and writes nothing.
	CheckInput func(agent, tool string, input json.RawMessage) error
	// Log receives what the store does not return, such as a wake it could
	// not send; nil discards it.
	Log *slog.Logger
	// Claims, when set, is the resource claims broker: a turn blocked on
	// claims that the store ends (a cancel, an interrupting message) has
	// its waiter withdrawn from the broker's queues (see claims.go).
	Claims claims.Broker
	// Retry bounds how a write that lost its race tries again, here and
	// in the runner's commits; zero is DefaultRetry.
	Retry retrypkg.Policy
	// Files keeps the files of messages (internal/files), in the stream
	// store's bucket under files/<session>/; nil keeps none, and a
	// message with files cannot be recorded.
	Files *files.Store
	// FilePolicy is what an agent accepts in a message's files; nil is
	// files.Policy's zero value (images and PDF, 20 MB, 5 a message).
	FilePolicy func(agent string) files.Policy
}

// stores are the two stores a session store is built on, and their reads.
type stores struct {
	facts   FactLog
	streams StreamStore
}

// core is the store's small core: its configuration and stores, the
// receipt its commits write (see WithReceipt), and the lanes its posts
// queue in (see retry.go).
type core struct {
	Config
	stores
	receipt *Receipt // see WithReceipt
	base    *Store   // the store without a receipt: this one, or the one WithReceipt was called on
	lanes   atomic.Pointer[lanes]
}

// New is a session store on a fact log and a stream store; set Waker, Now,
// Steering and Log on it before first use.
func New(facts FactLog, streams StreamStore) *Store {
	return build(&core{stores: stores{facts: facts, streams: streams}})
}

// build is the store on core c, its features over it.
func build(c *core) *Store {
	st := &Store{core: c}
	if c.base == nil {
		c.base = st
	}
	st.ops = ops{core: c, kids: &st.children}
	st.children = newChildren(c, &st.ops, c.base)
	st.lifecycle = newLifecycle(c, &c.base.children)
	return st
}

// Receipt asks a write to store, in its own transaction, the answer to the
// request that made it, under the request's idempotency key (see
// dynamo.Receipt). Answer builds the answer from the state after the write
// and the facts the write commits.
type Receipt struct {
	Key     string
	Request string
	Expires time.Time
	Answer  func(next reducer.State, written []reducer.Fact) ([]byte, error)
}

// WithReceipt returns a copy of the store whose commits also write rc, for
// one operation (Create, Post, Answer, Settle, Cancel). Such a commit fails
// with an error matching ErrReceiptTaken, writing nothing, when rc's key
// is already taken.
func (s *Store) WithReceipt(rc *Receipt) *Store {
	return build(&core{Config: s.Config, stores: s.stores, receipt: rc, base: s.root()})
}

// root is the store without a receipt.
func (s *core) root() *Store { return s.base }

// appendFacts writes facts and next, with the store's receipt if it has one.
func (s *core) appendFacts(ctx context.Context, id string, next reducer.State, facts []reducer.Fact) error {
	if s.receipt == nil {
		return s.facts.Append(ctx, id, next, facts...)
	}
	answer, err := s.receipt.Answer(next, facts)
	if err != nil {
		return fmt.Errorf("session: receipt answer: %w", err)
	}
	return s.facts.AppendWithReceipt(ctx, id, next, &dynamo.Receipt{
		Key: s.receipt.Key, Request: s.receipt.Request, Answer: answer, Expires: s.receipt.Expires,
	}, facts...)
}

// Clock returns the store's current time, in UTC.
func (s *core) Clock() time.Time { return s.now() }

func (s *core) now() time.Time { return s.Now.Now().UTC() }

// Load rebuilds a session in a bounded number of requests: the facts back to
// the newest snapshot, and that snapshot. It does not read the open turn's
// stream.
func (s *core) Load(ctx context.Context, id string) (*Session, error) {
	facts, err := s.facts.Tail(ctx, id)
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
		if err := s.streams.GetSnapshot(ctx, snap.Snapshot, &sn); err != nil {
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
func (s *core) Append(ctx context.Context, id string, st reducer.State, facts ...reducer.Fact) (reducer.State, error) {
	s.number(st, facts)
	next, err := st.Apply(facts...)
	if err != nil {
		return reducer.State{}, err
	}
	if err := s.appendFacts(ctx, id, next, facts); err != nil {
		return reducer.State{}, fmt.Errorf("session: append to %s: %w", id, err)
	}
	return next, nil
}

// number is the one home of fact numbering: facts follow st, each the next
// seq, and those without a time take the store's clock.
func (s *core) number(st reducer.State, facts []reducer.Fact) {
	now := s.now()
	for i := range facts {
		facts[i].Seq = st.LastSeq + 1 + int64(i)
		if facts[i].Time.IsZero() {
			facts[i].Time = now
		}
	}
}

// End appends a fact that ends the open turn, with a snapshot of the
// conversation as it ends. turn is the open turn's replayed stream, and
// the fact records its usage (the sum of its billed steps) whoever ends
// the turn: the runner, or an operator's cancel or interrupt. The
// snapshot is written first under a key no other writer uses; if the fact
// loses its race the snapshot is simply never referenced. A turn that was
// suspended as blocked on claims has its waiter withdrawn once the fact
// stands (see withdraw). Children the turn leaves running are then
// cancelled (Cascade; the ending fact recorded them, so a crash before
// that leaves them to the session's wake, which the tick re-sends); a
// failure there is logged, and the end stands.
func (s *core) End(ctx context.Context, sess *Session, turn conversation.Turn, f reducer.Fact) (reducer.State, error) {
	return s.end(ctx, sess, turn, nil, f)
}

// end is End with facts before the ending one, in the same write.
func (s *core) end(ctx context.Context, sess *Session, turn conversation.Turn, before []reducer.Fact, f reducer.Fact) (reducer.State, error) {
	st := sess.State
	if st.Turn == nil {
		return reducer.State{}, ErrNoTurn
	}
	if !f.Ends() {
		return reducer.State{}, fmt.Errorf("session: %s does not end a turn", f.Type)
	}
	outcome := map[reducer.Type]string{reducer.TurnCompleted: "completed", reducer.TurnFailed: "failed",
		reducer.TurnCancelled: "cancelled", reducer.TurnInterrupted: "interrupted"}[f.Type]
	facts := append(slices.Clone(before), f)
	s.number(st, facts)
	f = facts[len(facts)-1]
	f.Snapshot = streams.SnapshotKey(sess.ID, f.Seq)
	u := turn.Usage()
	f.Usage = &u
	facts[len(facts)-1] = f
	next, err := st.Apply(facts...)
	if err != nil {
		return reducer.State{}, err
	}
	started := make(map[string]bool, len(st.Turn.Executions))
	for _, e := range st.Turn.Executions {
		started[e.ToolCallID] = true
	}
	snap := Snapshot{Session: sess.ID, State: next, Messages: conversation.Close(sess.History, st.Turn.Messages, turn, outcome, started)}
	if err := s.streams.PutSnapshot(ctx, f.Snapshot, snap); err != nil {
		return reducer.State{}, fmt.Errorf("session: snapshot %s: %w", sess.ID, err)
	}
	if err := s.appendFacts(ctx, sess.ID, next, facts); err != nil {
		return reducer.State{}, fmt.Errorf("session: end turn of %s: %w", sess.ID, err)
	}
	sess.History = snap.Messages
	s.withdraw(ctx, sess.ID, st)
	next, err = s.root().CascadeFrom(ctx, sess.ID, next)
	if err != nil {
		s.log().WarnContext(ctx, "cancel the children an ended turn left running; the session's wake tries again", "session", sess.ID, "err", err)
	}
	sess.State = next
	return next, nil
}

// Compact appends a context.compacted fact for the running turn with a
// snapshot whose conversation is history, the compacted history that
// replaces sess.History (a summary, then the turns kept verbatim). Like End
// it writes the snapshot first under a fresh key, so a fact that loses its
// race, or a crash between the two writes, leaves the session as it was:
// the compaction is done once the fact is, and not before. Later loads
// rebuild from the snapshot.
func (s *core) Compact(ctx context.Context, sess *Session, history []conversation.Message, c reducer.Compaction, actor reducer.Actor) (reducer.State, error) {
	st := sess.State
	if st.Turn == nil {
		return reducer.State{}, ErrNoTurn
	}
	fs := []reducer.Fact{{Type: reducer.ContextCompacted, Actor: actor, Turn: st.Turn.ID, Compaction: &c}}
	s.number(st, fs)
	f := fs[0]
	f.Snapshot = streams.SnapshotKey(sess.ID, f.Seq)
	next, err := st.Apply(f)
	if err != nil {
		return reducer.State{}, err
	}
	if err := s.streams.PutSnapshot(ctx, f.Snapshot, Snapshot{Session: sess.ID, State: next, Messages: history}); err != nil {
		return reducer.State{}, fmt.Errorf("session: compacted snapshot of %s: %w", sess.ID, err)
	}
	if err := s.appendFacts(ctx, sess.ID, next, []reducer.Fact{f}); err != nil {
		return reducer.State{}, fmt.Errorf("session: compact %s: %w", sess.ID, err)
	}
	sess.State, sess.History = next, history
	return next, nil
}
