package batontest

import (
	"encoding/json"
	"fmt"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/pkg/reducer"
)

// Errors a callback's use (Kit.Complete, Kit.Fail, Kit.Heartbeat) fails
// with; none writes anything.
var (
	ErrCallbackUnknown = callback.ErrUnknown // forged, mistyped, or its session deleted
	ErrCallbackDone    = callback.ErrDone    // already completed: a token is used once
	ErrCallbackExpired = callback.ErrExpired // timed out, or its turn ended (a cancel)
)

// holder is the actor of a callback's token holder.
var holder = reducer.Actor{Kind: reducer.ActorCallback, ID: "token"}

// Complete completes the callback of token with output (any value JSON
// encodes) as the call's result, as the token's holder does through the
// callback route, and sends the turn's wake; the next Run resumes it.
func (k *Kit) Complete(token string, output any) error {
	b, err := json.Marshal(output)
	if err != nil {
		return fmt.Errorf("batontest: complete: %w", err)
	}
	return k.end(token, callback.Result{Output: b})
}

// Fail ends the callback of token with an error the model sees as the
// call's result.
func (k *Kit) Fail(token, text string) error { return k.end(token, callback.Result{Error: text}) }

func (k *Kit) end(token string, r callback.Result) error {
	ctx, cancel := k.ctx()
	defer cancel()
	return k.engine.Sessions.Complete(ctx, token, holder, r)
}

// Heartbeat renews the callback of token: its heartbeat timeout counts
// from now.
func (k *Kit) Heartbeat(token string) error {
	ctx, cancel := k.ctx()
	defer cancel()
	_, err := k.engine.Sessions.Heartbeat(ctx, token, holder)
	return err
}
