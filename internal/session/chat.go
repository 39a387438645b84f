package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds the chat's operations: Converse records a message,
// creating the session in the same write when there is none, and
// HasMessage tells whether a message id is already recorded.

// Converse records msg from owner in session id, creating the session for
// owner with agent, in the same write, when there is none; then it wakes
// the session. A text reducer.CheckText refuses fails with a
// *reducer.TextError, writing nothing. The message is delivered as the agent's steering policy
// says (see Store.Steering); reject fails with ErrRejected. check sees the loaded state (the zero State for a new
// session) before anything is written, and its error is returned as is.
// A message whose id is already in the inbox or the open turn is not
// appended again: Converse returns the state with dup true. The state
// returned is the one after the write.
func (s *ops) Converse(ctx context.Context, id, owner, agent string, msg reducer.Message, check func(reducer.State) error) (st reducer.State, dup bool, err error) {
	if err := reducer.CheckMessage("text", msg); err != nil {
		return reducer.State{}, false, fmt.Errorf("session: converse in %s: %w", id, err)
	}
	actor := reducer.Actor{Kind: reducer.ActorOperator, ID: owner}
	var ended *streams.Sink
	err = s.retry(ctx, func() error {
		dup = false
		var facts []reducer.Fact
		sess, err := s.Load(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			sess = &Session{ID: id}
			facts = append(facts, reducer.Fact{Type: reducer.SessionCreated, Actor: actor, Agent: agent, Owner: owner})
		case err != nil:
			return err
		}
		if err := check(sess.State); err != nil {
			return err
		}
		if HasMessage(sess.State, msg.ID) {
			st, dup = sess.State, true
			return nil
		}
		st, ended, err = s.receive(ctx, id, sess.State, actor, msg, facts...)
		if errors.Is(err, ErrConflict) && len(facts) == 0 {
			return s.buried(ctx, id, err)
		}
		return err
	})
	if err != nil || dup {
		return st, dup, err
	}
	s.closeInterrupted(ctx, id, ended)
	s.wake(ctx, id, wake.Message, st.LastSeq, 0)
	return st, false, nil
}

// buried tells a conflict from a session whose facts are still there
// but whose head is gone: a delete buried it and has yet to purge it, so
// the id names no session until it has (ErrDeleting). Any other
// conflict, err, is returned as it is, to be retried.
func (s *ops) buried(ctx context.Context, id string, err error) error {
	if _, herr := s.facts.Head(ctx, id); errors.Is(herr, ErrNotFound) || errors.Is(herr, dynamo.ErrNotFound) {
		return fmt.Errorf("session: %s: %w", id, ErrDeleting)
	}
	return err
}

// HasMessage reports whether message id waits in st's inbox or is one the
// open turn answers, or was steered (or waits to be steered) into it.
func HasMessage(st reducer.State, id string) bool {
	is := func(m reducer.Message) bool { return m.ID == id }
	return slices.ContainsFunc(st.Inbox, is) || (st.Turn != nil && (slices.ContainsFunc(st.Turn.Messages, is) ||
		slices.ContainsFunc(st.Turn.Steer, is) || slices.ContainsFunc(st.Turn.Steered, is)))
}
