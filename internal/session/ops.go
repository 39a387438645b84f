package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/traceparent"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds the operator's operations on a session: Create, Post
// (as the agent's steering policy says), Answer an approval, Settle an
// uncertain execution, Raise spend caps, SetTimer, SetSchedule and
// ClearSchedule, Cancel the open turn, and Follow a turn's end.

// ops are the operator's operations on sessions (this file, chat.go and
// claims.go), over the store's core; an approval a child asked its
// ancestors for is answered through the children.
type ops struct {
	*core
	kids *children
}

// Create starts a new session for owner with agent. It fails with
// ErrConflict if the id is taken.
func (s *ops) Create(ctx context.Context, id, owner, agent string) (reducer.State, error) {
	return s.Append(ctx, id, reducer.State{}, reducer.Fact{
		Type: reducer.SessionCreated, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: owner},
		Agent: agent, Owner: owner,
	})
}

// Post records a user message and wakes the session. It returns the
// message id. A text reducer.CheckText refuses (blank, over
// reducer.MaxText, not UTF-8) fails with a *reducer.TextError, writing
// nothing. While a turn is open the agent's steering policy decides the
// message's delivery (see deliver): an agent that rejects fails with
// ErrRejected and nothing is written. Posts to one session from this store take turns; a post that
// cannot commit within RetryBudget (or ctx's deadline) fails with ErrBusy.
func (s *ops) Post(ctx context.Context, id string, actor reducer.Actor, text string) (string, error) {
	return s.PostMessage(ctx, id, actor, reducer.Message{Text: text})
}

// PostMessage is Post of a message that may carry files (msg.Files, whose
// bytes are stored already: internal/files' Ingest); a message with files
// may have no text. Its id is assigned here.
func (s *ops) PostMessage(ctx context.Context, id string, actor reducer.Actor, msg reducer.Message) (string, error) {
	if err := reducer.CheckMessage("text", msg); err != nil {
		return "", fmt.Errorf("session: post to %s: %w", id, err)
	}
	msg = reducer.Message{ID: ids.New("msg"), Text: msg.Text, Files: msg.Files}
	// The budget covers the wait for this process's earlier posts too.
	bctx, cancel := context.WithTimeout(ctx, RetryBudget)
	defer cancel()
	l, leave, err := s.enter(bctx, id)
	if err != nil {
		if ctx.Err() == nil {
			err = ErrBusy
		}
		return "", fmt.Errorf("session: post to %s: waiting for earlier posts: %w", id, err)
	}
	var st reducer.State
	var ended *streams.Sink
	loaded := l.last != nil // the lane's last post left its state to catch up from
	if loaded {
		st = *l.last
	}
	err = s.retry(bctx, func() error {
		var err error
		if st, err = s.follow(ctx, id, st, loaded); err != nil {
			return err
		}
		loaded = true
		next, sink, err := s.receive(ctx, id, st, actor, msg)
		if err == nil {
			st, ended = next, sink
			l.last = &next
		}
		return err
	})
	leave()
	if err != nil {
		return "", err
	}
	s.closeInterrupted(ctx, id, ended)
	s.wake(ctx, id, wake.Message, st.LastSeq, 0)
	return msg.ID, nil
}

// deliver decides, in the one place it is decided, how msg reaches the
// session in state st: with no open turn it is queued (enqueue); else the
// agent's steering policy applies, and reject refuses it with ErrRejected.
// It sets msg.Delivery, which the message.received fact records.
func (s *ops) deliver(st reducer.State, msg *reducer.Message) error {
	msg.Delivery = reducer.SteerEnqueue
	if st.Turn == nil {
		return nil
	}
	p := s.SteeringOf(st.Agent)
	if p == reducer.SteerReject {
		return fmt.Errorf("session: message to %s: agent %q, turn %s open: %w", st.Agent, st.Agent, st.Turn.ID, ErrRejected)
	}
	msg.Delivery = p
	return nil
}

// SteeringOf is agent's steering policy as Steering gives it, enqueue
// when it gives none.
func (s *ops) SteeringOf(agent string) reducer.Steering {
	if s.Steering != nil {
		if v := s.Steering(agent); v != "" {
			return v
		}
	}
	return reducer.SteerEnqueue
}

// receive records msg in session id, whose state is st, after the facts
// before, as deliver decides. A message that interrupts a suspended turn
// ends that turn in the same write (turn.interrupted, with its snapshot),
// since no invocation runs to end it at a step boundary; the turn's stream
// is then returned, to be closed once the write stands. A message posted
// under a trace (ctx carries a traced request's traceparent, see package
// traceparent) records it, and the turn it starts is traced under it.
func (s *ops) receive(ctx context.Context, id string, st reducer.State, actor reducer.Actor, msg reducer.Message, before ...reducer.Fact) (reducer.State, *streams.Sink, error) {
	if msg.Trace == "" {
		msg.Trace = traceparent.From(ctx)
	}
	if err := s.deliver(st, &msg); err != nil {
		return reducer.State{}, nil, err
	}
	f := reducer.Fact{Type: reducer.MessageReceived, Actor: actor, Message: &msg}
	if msg.Delivery != reducer.SteerInterrupt || st.Status != reducer.Suspended {
		next, err := s.Append(ctx, id, st, append(before, f)...)
		return next, nil, err
	}
	sess, err := s.Load(ctx, id)
	if err != nil {
		return reducer.State{}, nil, err
	}
	if sess.State.LastSeq != st.LastSeq {
		return reducer.State{}, nil, fmt.Errorf("session: interrupt %s: the session moved on: %w", id, ErrConflict)
	}
	t := st.Turn
	sink, ps, err := s.ResumeStream(ctx, id, t.Stream)
	if err != nil {
		return reducer.State{}, nil, fmt.Errorf("session: interrupt %s: read stream: %w", id, err)
	}
	next, err := s.end(ctx, sess, conversation.Replay(ps), append(before, f), reducer.Fact{
		Type: reducer.TurnInterrupted, Actor: actor, Turn: t.ID,
	})
	if err != nil {
		return reducer.State{}, nil, err
	}
	return next, sink, nil
}

// closeInterrupted closes the stream of a turn receive ended, if any.
func (s *ops) closeInterrupted(ctx context.Context, id string, sink *streams.Sink) {
	if sink == nil {
		return
	}
	if err := s.CloseStream(ctx, sink, streams.Interrupted, "interrupted"); err != nil {
		// The fact stands; the stream is left open for a reader to time out on.
		s.log().WarnContext(ctx, "interrupt: close stream", "session", id, "stream", sink.Stream(), "err", err)
	}
}

// Answer records an operator's decision on a pending approval and wakes the
// turn once nothing else is pending. An approval of a child session that
// the open turn showed (child.approval) is answered on the child, which
// decides it, or, for a deeper descendant's request, passes it down the
// chain to the session that asked. An approval id that is not pending —
// unknown, already answered, or of another turn — fails with ErrNotPending
// and writes nothing.
func (s *ops) Answer(ctx context.Context, id string, actor reducer.Actor, a reducer.Answer) error {
	approvalID := a.ApprovalID
	var read reducer.State // the state the answer was decided on
	st, err := s.transition(ctx, id, func(cur reducer.State) (reducer.Fact, error) {
		read = cur
		// The reducer decides whether the approval is pending; this only
		// names its turn and tool call.
		ans := reducer.Answer{ApprovalID: approvalID, Decision: a.Decision, Reason: a.Reason, Input: a.Input, Output: a.Output}
		var turn string
		if t := cur.Turn; t != nil {
			turn = t.ID
			for _, p := range t.Pending {
				if p.ID == approvalID {
					ans.ToolCallID = p.ToolCallID
					if a.Decision == reducer.Edit {
						ans.Original = p.Input // the fact holds both inputs
						if err := s.checkEdit(cur.Agent, p.Tool, a.Input); err != nil {
							return reducer.Fact{}, err
						}
					}
				}
			}
		}
		return reducer.Fact{Type: reducer.ApprovalAnswered, Actor: actor, Turn: turn, Answer: &ans}, nil
	})
	if errors.Is(err, ErrNotPending) {
		// Perhaps a child's request, which the turn showed: the child's
		// reducer decides it.
		if routed, cerr := s.kids.AnswerChild(ctx, read, actor, a); routed || cerr != nil {
			return cerr
		}
	}
	if err != nil {
		return fmt.Errorf("session: answer approval %s: %w", approvalID, err)
	}
	if len(st.Turn.Pending) == 0 {
		s.wake(ctx, id, wake.Approval, st.LastSeq, 0)
	}
	return nil
}

// checkEdit checks an edit's input against the tool's schema.
func (s *ops) checkEdit(agent, tool string, input json.RawMessage) error {
	if s.CheckInput == nil || len(input) == 0 {
		return nil // the reducer refuses an edit without input
	}
	if err := s.CheckInput(agent, tool, input); err != nil {
		return fmt.Errorf("%w: the edited input: %v", reducer.ErrBadAnswer, err)
	}
	return nil
}

// Settle records an operator's verdict on an uncertain execution and wakes
// the turn. An execution that awaits no verdict fails with ErrNotPending.
func (s *ops) Settle(ctx context.Context, id string, actor reducer.Actor, executionID string, v reducer.Verdict) error {
	st, err := s.transition(ctx, id, func(cur reducer.State) (reducer.Fact, error) {
		var turn string // the reducer decides whether the execution awaits a verdict
		if cur.Turn != nil {
			turn = cur.Turn.ID
		}
		return reducer.Fact{Type: reducer.ExecutionVerdict, Actor: actor, Turn: turn,
			Settled: &reducer.Settled{ExecutionID: executionID, Verdict: v}}, nil
	})
	if err != nil {
		return fmt.Errorf("session: settle execution %s: %w", executionID, err)
	}
	s.wake(ctx, id, wake.Verdict, st.LastSeq, 0)
	return nil
}

// Raise records an operator's new spend caps for a turn suspended at a
// limit and wakes it; the turn resumes under them. Caps that are negative,
// not finite, or all zero are rejected with ErrBadCaps; a turn not
// suspended for a limit fails with ErrNotPending; a raise that does not
// lift the cap the turn reached (as its suspension named it) past the
// usage that reached it fails with ErrCapNotLifted, saying which cap to
// raise and past what. None of them writes anything.
func (s *ops) Raise(ctx context.Context, id string, actor reducer.Actor, r reducer.Raise) error {
	if err := checkCaps(r); err != nil {
		return err
	}
	st, err := s.transition(ctx, id, func(cur reducer.State) (reducer.Fact, error) {
		t := cur.Turn
		if t == nil || cur.Status != reducer.Suspended || t.Cause != reducer.CauseLimit {
			return reducer.Fact{}, fmt.Errorf("session: raise the limits of %s: no turn is suspended at a limit: %w", id, ErrNotPending)
		}
		if l := t.Limit; l != (reducer.Limit{}) && !l.Lifts(r) {
			return reducer.Fact{}, fmt.Errorf("%w: the turn is suspended at its %s cap (%s); raise %s past %s to let it go on",
				ErrCapNotLifted, l.Field(), l.Reaches(), l.Field(), l.Amount(l.Usage))
		}
		return reducer.Fact{Type: reducer.LimitsRaised, Actor: actor, Turn: t.ID, Raise: &r}, nil
	})
	if err != nil {
		return err
	}
	s.wake(ctx, id, wake.Raised, st.LastSeq, 0)
	return nil
}

// SetTimer moves the end of the wait of a turn suspended on a timer
// (reducer.CauseTimer) to at, and sends a wake due then: a time now or past
// ends the wait at once, and the wait_until calls it was for return then.
// The time they named no longer fires. A turn not suspended on a timer
// fails with ErrNotPending and nothing is written.
func (s *ops) SetTimer(ctx context.Context, id string, actor reducer.Actor, at time.Time) error {
	st, err := s.transition(ctx, id, func(cur reducer.State) (reducer.Fact, error) {
		t := cur.Turn
		if t == nil || cur.Status != reducer.Suspended || t.Cause != reducer.CauseTimer {
			return reducer.Fact{}, fmt.Errorf("session: set the timer of %s: no turn is suspended on a timer: %w", id, ErrNotPending)
		}
		return reducer.Fact{Type: reducer.TimerSet, Actor: actor, Turn: t.ID, Wake: at.UTC()}, nil
	})
	if err != nil {
		return err
	}
	s.wake(ctx, id, wake.Timer, st.LastSeq, at.Sub(s.now()))
	return nil
}

// SetSchedule gives the session a schedule, replacing any: at each
// occurrence of cronExpr (five fields, UTC) the tick posts text. A cron
// reducer.CheckCron refuses (a descriptor such as @every, a time zone
// prefix, six fields, one that does not parse) or a text reducer.CheckText
// refuses (blank, over reducer.MaxText) fails with ErrBadSchedule, wrapping
// the check's error, and writes nothing.
func (s *ops) SetSchedule(ctx context.Context, id string, actor reducer.Actor, cronExpr, text string) error {
	if err := reducer.CheckCron(cronExpr); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSchedule, err)
	}
	if err := reducer.CheckText("text", text); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSchedule, err)
	}
	_, err := s.transition(ctx, id, func(reducer.State) (reducer.Fact, error) {
		return reducer.Fact{Type: reducer.ScheduleSet, Actor: actor, Schedule: &reducer.Schedule{Cron: cronExpr, Text: text}}, nil
	})
	return err
}

// ClearSchedule removes the session's schedule; its next occurrence never
// fires. A session without one fails with ErrNotPending.
func (s *ops) ClearSchedule(ctx context.Context, id string, actor reducer.Actor) error {
	_, err := s.transition(ctx, id, func(cur reducer.State) (reducer.Fact, error) {
		if cur.Schedule == nil {
			return reducer.Fact{}, fmt.Errorf("session: clear the schedule of %s: it has none: %w", id, ErrNotPending)
		}
		return reducer.Fact{Type: reducer.ScheduleCleared, Actor: actor}, nil
	})
	return err
}

// checkCaps rejects a raise that sets nothing or holds a negative or
// non-finite cap, naming the field.
func checkCaps(r reducer.Raise) error {
	for _, c := range []struct {
		name string
		caps reducer.Caps
	}{{"turn", r.Turn}, {"session", r.Session}} {
		switch {
		case c.caps.InputTokens < 0:
			return fmt.Errorf("%w: %s.inputTokens %d is negative", ErrBadCaps, c.name, c.caps.InputTokens)
		case c.caps.OutputTokens < 0:
			return fmt.Errorf("%w: %s.outputTokens %d is negative", ErrBadCaps, c.name, c.caps.OutputTokens)
		case c.caps.Cost < 0 || math.IsNaN(c.caps.Cost) || math.IsInf(c.caps.Cost, 0):
			return fmt.Errorf("%w: %s.cost %v is not a positive amount", ErrBadCaps, c.name, c.caps.Cost)
		}
	}
	if r == (reducer.Raise{}) {
		return fmt.Errorf("%w: the raise sets no cap", ErrBadCaps)
	}
	return nil
}

// Cancel ends the open turn as cancelled, which cancels the turn's running
// children, recursively (Cascade, as every ending does), and closes its
// stream. A runner still working on the turn loses its next
// compare-and-set and stops.
func (s *ops) Cancel(ctx context.Context, id string, actor reducer.Actor, reason string) error {
	var sink *streams.Sink
	err := s.retry(ctx, func() error {
		sess, err := s.Load(ctx, id)
		if err != nil {
			return err
		}
		t := sess.State.Turn
		if t == nil {
			return fmt.Errorf("session: cancel %s: %w", id, ErrNoTurn)
		}
		var ps []parts.Part
		sink, ps, err = s.ResumeStream(ctx, id, t.Stream)
		if err != nil {
			return fmt.Errorf("session: cancel %s: read stream: %w", id, err)
		}
		_, err = s.End(ctx, sess, conversation.Replay(ps), reducer.Fact{
			Type: reducer.TurnCancelled, Actor: actor, Turn: t.ID, Reason: reason,
		})
		return err
	})
	if err != nil {
		return err
	}
	if err := s.CloseStream(ctx, sink, streams.Cancelled, "cancelled"); err != nil {
		// The fact stands; the stream is left open for a reader to time out on.
		s.log().WarnContext(ctx, "cancel: close stream", "session", id, "stream", sink.Stream(), "err", err)
	}
	// Messages that arrived during the turn now start a new one.
	s.wake(ctx, id, wake.Cancelled, 0, 0)
	return nil
}

// follow brings st, the state of session id, up to date: a full load the
// first time, and afterwards, when a retry lost a race, only the facts
// appended since st, so a round under contention costs one short read.
func (s *core) follow(ctx context.Context, id string, st reducer.State, loaded bool) (reducer.State, error) {
	if !loaded {
		sess, err := s.Load(ctx, id)
		if err != nil {
			return reducer.State{}, err
		}
		return sess.State, nil
	}
	return s.Follow(ctx, id, st)
}

// Follow brings st, a state of session id, up to date with the facts
// appended since it, in one short read: st itself when there are none.
func (s *core) Follow(ctx context.Context, id string, st reducer.State) (reducer.State, error) {
	facts, err := s.facts.Facts(ctx, id, st.LastSeq)
	if err != nil {
		return reducer.State{}, fmt.Errorf("session: follow %s: %w", id, err)
	}
	next, err := st.Apply(facts...)
	if err != nil {
		return reducer.State{}, fmt.Errorf("session: follow %s: %w", id, err)
	}
	return next, nil
}

// transition appends the one fact next decides from the session's current
// state, under the lost-race retry; an error from next refuses and writes
// nothing.
func (s *core) transition(ctx context.Context, id string, next func(reducer.State) (reducer.Fact, error)) (reducer.State, error) {
	var st reducer.State
	err := s.retry(ctx, func() error {
		sess, err := s.Load(ctx, id)
		if err != nil {
			return err
		}
		f, err := next(sess.State)
		if err != nil {
			return err
		}
		st, err = s.Append(ctx, id, sess.State, f)
		return err
	})
	return st, err
}

// log is the store's logger; without one, what it would log is discarded.
func (s *core) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// wake sends the session's wake after delay, best effort: a lost one is
// re-sent by the tick.
func (s *core) wake(ctx context.Context, id string, reason wake.Reason, seq int64, delay time.Duration) {
	wake.Notify(ctx, s.Waker, s.log(), wake.Wake{Session: id, Reason: reason, Seq: seq, Trace: traceparent.From(ctx)}, delay)
}
