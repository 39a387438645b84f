package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// Callbacks (internal/callback) in the ledger: a tool that completes by
// callback opens one while it runs (the token's hash recorded first),
// returns callback.ErrPending, and the turn suspends for CauseCallback;
// on resume the call's result is the callback's end, or a timeout the
// runner records once the deadline passed.

// DataCallback is the part that shows a call waiting for its callback:
// data-callback{id: the call, data: {toolCallId, deadline}}.
const DataCallback parts.Type = "data-callback"

// callbacks is the ledger's view of the invocation's callbacks.
type callbacks struct {
	*core
	waiting bool // a call of the step waits for its callback
}

// settled answers call c from its callback, when the call's newest
// execution handed one out: with its end, or, past its deadline, with a
// timeout recorded now. It reports whether the callback owns the call;
// one still open leaves it waiting.
func (cb *callbacks) settled(ctx context.Context, c *conversation.Call, now time.Time) (bool, error) {
	t := cb.sess.State.Turn
	rec, ok := t.Callback(c.ID)
	if !ok {
		return false, nil
	}
	if ex, started := t.Execution(c.ID); !started || ex.Try() != rec.Attempt {
		return false, nil // an older attempt's: the newest runs as the ledger says
	}
	if !rec.Ended() && !now.Before(rec.Deadline()) {
		err := cb.append(ctx, reducer.Fact{Type: reducer.CallbackEnded, Actor: agentActor(cb.out.Turn), Turn: cb.out.Turn,
			Callback: &callback.Callback{Hash: rec.Hash, Status: callback.TimedOut, Error: rec.TimeoutText()}})
		if err != nil && !errors.Is(err, callback.ErrDone) {
			return true, fmt.Errorf("turn %s: time out the callback of %s: %w", cb.out.Turn, c.ID, err)
		}
		// Timed out now, or ended first by its holder: the state has which.
		rec, _ = cb.sess.State.Turn.Callback(c.ID)
	}
	if !rec.Ended() {
		cb.waiting = true
		return true, nil
	}
	cb.emit(resultOf(c.ID, rec))
	return true, nil
}

// resultOf is the call's result part that callback rec's end gives it.
func resultOf(callID string, rec callback.Callback) parts.Part {
	if rec.Status == callback.Completed {
		return parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: callID, Output: rec.Output}
	}
	return parts.Part{Type: parts.ToolOutputError, ToolCallID: callID, ErrorText: rec.Error}
}

// opener hands out the callback of run p of a tool that completes by
// callback: a fresh token, recorded by its hash before the tool gets it.
// A second Open in the run returns the same handle.
func (cb *callbacks) opener(p *plan) callback.Opener {
	var h *callback.Handle
	return func(ctx context.Context) (callback.Handle, error) {
		if h != nil {
			return *h, nil
		}
		token, tok := callback.Mint(cb.out.Session, cb.out.Turn)
		rec := &callback.Callback{ToolCallID: p.c.ID, Tool: p.c.Name, Attempt: p.exec.Try(), Hash: tok.Hash, Policy: p.t.Callback.Of()}
		if err := cb.append(ctx, reducer.Fact{Type: reducer.CallbackOpened, Actor: agentActor(cb.out.Turn), Turn: cb.out.Turn, Callback: rec}); err != nil {
			return callback.Handle{}, fmt.Errorf("callback: record the token: %w", err)
		}
		opened, _ := cb.sess.State.Turn.Callback(p.c.ID)
		url, beat := callback.URLs(cb.r.CallbackURL, token)
		h = &callback.Handle{Token: token, URL: url, HeartbeatURL: beat, Deadline: opened.Deadline()}
		return *h, nil
	}
}

// returned settles what run p of a tool that completes by callback
// returned: ErrPending once it opened one leaves the call waiting (pending
// is true, no result); any other result, when it opened one, ends the
// callback with that result first, so the token is used up. ErrPending
// without a callback is the model's error.
func (cb *callbacks) returned(ctx context.Context, p *plan, part parts.Part, err error) (parts.Part, bool, error) {
	rec, opened := cb.sess.State.Turn.Callback(p.c.ID)
	opened = opened && rec.Attempt == p.exec.Try()
	pending := errors.Is(err, callback.ErrPending)
	switch {
	case pending && opened && rec.Ended():
		return resultOf(p.c.ID, rec), false, nil // ended while the tool ran
	case pending && opened:
		cb.waiting = true
		cb.emit(parts.Part{Type: DataCallback, ID: p.c.ID, Data: mustJSON(map[string]any{"toolCallId": p.c.ID, "deadline": rec.Deadline()})})
		return parts.Part{}, true, nil
	case pending:
		return parts.Part{Type: parts.ToolOutputError, ToolCallID: p.c.ID,
			ErrorText: "the tool returned pending without opening a callback"}, false, nil
	case !opened || rec.Ended() || errors.Is(err, errCut):
		return part, false, err
	}
	end := &callback.Callback{Hash: rec.Hash, Status: callback.Completed, Output: part.Output}
	if part.Type != parts.ToolOutputAvailable {
		end.Status, end.Output, end.Error = callback.Failed, nil, part.ErrorText
	}
	if aerr := cb.append(ctx, reducer.Fact{Type: reducer.CallbackEnded, Actor: agentActor(cb.out.Turn), Turn: cb.out.Turn, Callback: end}); aerr != nil {
		if !errors.Is(aerr, callback.ErrDone) {
			return part, false, aerr
		}
		// Its holder ended it first: that end is the result.
		rec, _ = cb.sess.State.Turn.Callback(p.c.ID)
		return resultOf(p.c.ID, rec), false, nil
	}
	return part, false, err
}

// wakeDelay is how long a turn suspended for callbacks waits before its
// wake: none when every callback ended, else until the first deadline.
func wakeDelay(t *reducer.Turn, now time.Time) time.Duration {
	n, first := t.Awaiting()
	if n == 0 {
		return 0
	}
	return max(first.Sub(now), 0)
}

// withOpener gives run p's context the opener of a tool that completes
// by callback.
func (cb *callbacks) withOpener(ctx context.Context, p *plan) context.Context {
	if p.t.Callback == nil || p.exec == nil {
		return ctx
	}
	return callback.WithOpener(ctx, cb.opener(p))
}
