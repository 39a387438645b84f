package turn

import (
	"context"
	"fmt"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// Steering at step boundaries. A message posted while the turn runs is
// recorded by the session store under the agent's policy (reducer.Steering):
// steer puts it in Turn.Steer, interrupt sets Turn.Interrupt. At each step
// boundary a run whose agent steers or interrupts reads the facts appended
// since its state (one query), then ends an interrupted turn, or delivers
// the steer messages: a data-steered part, flushed as the step's
// checkpoint, then message.steered. A crash between the two leaves the
// messages in the stream and in Turn.Steer; the next invocation records
// message.steered without delivering them again.

// steering catches a run up with the messages posted meanwhile and
// steers them in; the endings stop the turn.
type steering struct {
	*core
	end ender
}

// polls reports whether the run reads new facts at each step boundary.
func (ru *steering) polls() bool {
	return ru.agent.Steering == reducer.SteerSteer || ru.agent.Steering == reducer.SteerInterrupt
}

// catchUp applies the facts appended since the run's state. A fact that
// took the turn out of this invocation's hands is a lost race.
func (ru *steering) catchUp(ctx context.Context) error {
	if !ru.polls() {
		return nil
	}
	st := ru.sess.State
	next, err := ru.r.Sessions.Follow(ctx, ru.out.Session, st)
	if err != nil {
		return fmt.Errorf("turn %s: catch up: %w", ru.out.Turn, err)
	}
	if !next.Holds(st.Turn) {
		return fmt.Errorf("turn %s: the turn left this invocation: %w", ru.out.Turn, session.ErrConflict)
	}
	ru.sess.State = next
	return nil
}

// deliver steers the messages waiting in Turn.Steer into the turn: those
// not yet in its stream go into a data-steered part, the stream is flushed
// (the checkpoint before the next step), and message.steered records them
// all.
func (ru *steering) deliver(ctx context.Context) error {
	waiting := ru.sess.State.Turn.Steer
	if len(waiting) == 0 {
		return nil
	}
	have := map[string]bool{}
	for _, m := range ru.turn.Delivered() {
		have[m.ID] = true
	}
	var fresh []reducer.Message
	ids := make([]string, len(waiting))
	for i, m := range waiting {
		ids[i] = m.ID
		if !have[m.ID] {
			fresh = append(fresh, m)
		}
	}
	if len(fresh) > 0 {
		ru.emit(parts.Part{Type: parts.DataSteered, Data: conversation.SteeredData(fresh)})
	}
	if ru.dirty {
		if err := ru.sink.Flush(ctx); err != nil {
			return err
		}
		ru.dirty = false
	}
	ru.replay()
	return ru.append(ctx, reducer.Fact{Type: reducer.MessageSteered, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Steered: ids})
}

// interrupt ends a turn a message interrupted: it closes the stream, then
// records turn.interrupted with a snapshot, in which calls still without a
// result get conversation.Unresolved's. The message waits in the inbox
// (Outcome.Waiting) to start the next turn.
func (ru *steering) interrupt(ctx context.Context) (Outcome, error) {
	ru.emit(parts.Part{Type: parts.Finish, FinishReason: "interrupted"})
	if err := ru.sink.Close(ctx, streams.Interrupted); err != nil {
		return ru.end.stopped(ctx, err)
	}
	return ru.end.record(ctx, reducer.Fact{Type: reducer.TurnInterrupted}, Interrupted)
}

// steered reports whether user messages were steered in after the turn's
// last step: the model has not answered them yet.
func steered(t conversation.Turn) bool {
	if last := t.Last(); last != nil {
		return len(last.Steered) > 0
	}
	return len(t.Steered) > 0
}
