package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// Complete ends the callback whose token is given with r, as actor (the
// token's holder, or an operator), and wakes the turn once no callback of
// it is open. A token that is malformed, of no session or of no callback
// of its turn fails with callback.ErrUnknown; one already used with
// callback.ErrDone; one past its deadline, or whose turn ended, with
// callback.ErrExpired; a result Result.Check refuses with
// callback.ErrBadResult. None of them writes anything.
func (s *ops) Complete(ctx context.Context, token string, actor reducer.Actor, r callback.Result) error {
	if err := r.Check(); err != nil {
		return err
	}
	tok, err := parseToken(token)
	if err != nil {
		return err
	}
	end := &callback.Callback{Hash: tok.Hash, Status: r.Status(), Output: r.Output, Error: r.Error}
	st, err := s.onToken(ctx, tok, reducer.Fact{Type: reducer.CallbackEnded, Actor: actor, Turn: tok.Turn, Callback: end})
	if err != nil {
		return fmt.Errorf("session: complete a callback of %s: %w", tok.Session, err)
	}
	if n, _ := st.Turn.Awaiting(); n == 0 {
		s.wake(ctx, tok.Session, wake.Callback, st.LastSeq, 0)
	}
	return nil
}

// Heartbeat records a heartbeat of the callback whose token is given: its
// heartbeat timeout counts from now. It returns the callback's new
// deadline, and fails as Complete does.
func (s *ops) Heartbeat(ctx context.Context, token string, actor reducer.Actor) (callback.Callback, error) {
	tok, err := parseToken(token)
	if err != nil {
		return callback.Callback{}, err
	}
	st, err := s.onToken(ctx, tok, reducer.Fact{Type: reducer.CallbackBeat, Actor: actor, Turn: tok.Turn, Callback: &callback.Callback{Hash: tok.Hash}})
	if err != nil {
		return callback.Callback{}, fmt.Errorf("session: heartbeat of a callback of %s: %w", tok.Session, err)
	}
	if c, ok := st.Turn.CallbackByHash(tok.Hash); ok {
		return c, nil
	}
	return callback.Callback{}, callback.ErrUnknown
}

// parseToken parses a token, a malformed one being unknown.
func parseToken(token string) (callback.Token, error) {
	tok, err := callback.Parse(token)
	if err != nil {
		return callback.Token{}, errors.Join(callback.ErrUnknown, err)
	}
	return tok, nil
}

// onToken appends f, a fact on the callback of tok, to tok's session. A
// session that is not there is an unknown token.
func (s *ops) onToken(ctx context.Context, tok callback.Token, f reducer.Fact) (reducer.State, error) {
	st, err := s.transition(ctx, tok.Session, func(reducer.State) (reducer.Fact, error) { return f, nil })
	if errors.Is(err, ErrNotFound) {
		return st, errors.Join(callback.ErrUnknown, err)
	}
	return st, err
}
