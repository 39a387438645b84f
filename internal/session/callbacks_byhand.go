package session

import (
	"context"
	"fmt"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// CompleteCall ends by hand, as actor (the session's owner, who holds no
// token), the callback of tool call toolCallID in session id's open turn
// with r, and wakes the turn once no callback of it is open, as Complete
// does for the token's holder. reason, when set, is recorded with the
// end. The callback must be the one the call's newest execution handed
// out. A session with no open turn, or whose open turn has no such
// callback, fails with callback.ErrUnknown; one already ended with
// callback.ErrDone; one past its deadline with callback.ErrExpired; a
// result Result.Check refuses with callback.ErrBadResult; a session that
// is not there with ErrNotFound. None of them writes anything.
func (s *ops) CompleteCall(ctx context.Context, id, toolCallID string, actor reducer.Actor, r callback.Result, reason string) error {
	if err := r.Check(); err != nil {
		return err
	}
	st, err := s.transition(ctx, id, func(cur reducer.State) (reducer.Fact, error) {
		t := cur.Turn
		if t == nil {
			return reducer.Fact{}, fmt.Errorf("the session has no open turn: %w", callback.ErrUnknown)
		}
		c, ok := t.Callback(toolCallID)
		if ex, started := t.Execution(toolCallID); !ok || !started || ex.Try() != c.Attempt {
			return reducer.Fact{}, fmt.Errorf("tool call %s of turn %s handed out no callback: %w", toolCallID, t.ID, callback.ErrUnknown)
		}
		// The reducer decides whether it is still open and in time.
		end := &callback.Callback{Hash: c.Hash, Status: r.Status(), Output: r.Output, Error: r.Error}
		return reducer.Fact{Type: reducer.CallbackEnded, Actor: actor, Turn: t.ID, Reason: reason, Callback: end}, nil
	})
	if err != nil {
		return fmt.Errorf("session: complete the callback of %s in %s: %w", toolCallID, id, err)
	}
	if n, _ := st.Turn.Awaiting(); n == 0 {
		s.wake(ctx, id, wake.Callback, st.LastSeq, 0)
	}
	return nil
}
