package baton

import (
	"context"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/tool"
)

// Callback is what a tool that completes by callback hands to another
// system: Token, which is the capability (whoever holds it can complete
// the call, once, with no other credential), URL, which takes POST
// {"output": …} or {"error": "…"}, HeartbeatURL, and Deadline, when the
// call times out unless a heartbeat moves it. The URLs are empty when the
// deployment has no public URL (BATON_CALLBACK_URL); the token still
// completes through `baton complete` and the kit.
type Callback = callback.Handle

// CallbackPolicy bounds a callback: Timeout from the hand-out (24 h when
// zero, at most a year), and when set, Heartbeat between heartbeats.
type CallbackPolicy = callback.Policy

// ErrResultPending is what a tool that completes by callback returns once
// it handed its token out: the call's result is what the token's holder
// sends. It is Temporal's activity.ErrResultPending, for baton:
//
//	func(ctx context.Context, in Build) (any, error) {
//		cb, err := baton.CallbackOf(ctx)
//		if err != nil {
//			return nil, err
//		}
//		if err := ci.Start(ctx, in.Ref, cb.URL); err != nil {
//			return nil, err // the model sees the error; the token is used up
//		}
//		return nil, baton.ErrResultPending
//	}
var ErrResultPending = callback.ErrPending

// ErrNoCallback: CallbackOf outside a tool that completes by callback.
var ErrNoCallback = callback.ErrNoCallback

// CompletesByCallback makes a tool's calls complete from outside: its
// run opens a callback (CallbackOf), hands it on and returns
// ErrResultPending, and the turn suspends, with no invocation running,
// until the token's holder sends the result or p's timeout (or heartbeat
// timeout) passes, when the model gets a timeout error. The tool is a side
// effect: its start is in the execution ledger, and handing out the token
// is its effect (a crash after that never hands out a second one for the
// call). A policy Check refuses, or a read tool, does not build.
func CompletesByCallback(p CallbackPolicy) ToolOption {
	return func(t *Tool) {
		if t.Effect == tool.Read {
			t.Effect = tool.External
		}
		t.Callback = &p
	}
}

// CallbackOf hands out the callback of the tool call running in ctx. Its
// token is recorded (by its hash, never in clear) before it is returned;
// calling it again in the same run returns the same one. It fails with
// ErrNoCallback outside a tool declared with CompletesByCallback.
func CallbackOf(ctx context.Context) (Callback, error) { return callback.Open(ctx) }

// DefaultCallbackTimeout is a callback's timeout when its policy sets none.
const DefaultCallbackTimeout = callback.DefaultTimeout
