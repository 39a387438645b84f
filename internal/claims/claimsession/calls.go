package claimsession

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// Resource claims around the execution ledger. A side-effecting call whose
// tool declares claims asks the broker (Calls.Broker) before its
// execution is recorded: granted, the grant is recorded with the execution
// (claim.granted, in the same write as execution.started) and released
// once the result is durable (claim.released), waking the sessions the
// release unblocked; blocked or over capacity, the turn suspends as
// CauseBlocked with no invocation running, and asks again when a release
// wakes it or its poll does. A grant whose execution became uncertain is
// quarantined with the suspension for a verdict; a rerun verdict runs
// under the same grant, an abandon verdict releases it. A grant held by a
// call that has its result (the invocation died before the release) is
// released as the turn next settles its calls.

// Turn is the running turn as its calls' claims need it: package turn's
// port, which its invocation implements.
type Turn interface {
	// SessionID and TurnID name the running turn.
	SessionID() string
	TurnID() string
	// State is the session's state as the invocation last committed it.
	State() reducer.State
	// Pending lists the ids of the last step's calls that have no result.
	Pending() []string
	// Append commits facts of the running turn, retrying as the runner
	// does.
	Append(ctx context.Context, facts ...reducer.Fact) error
	// Load reads the session's state from the store anew.
	Load(ctx context.Context) (reducer.State, error)
}

// Calls asks the claims broker for a turn's calls' claims and releases
// them. Its fields are set once, for one invocation.
type Calls struct {
	// Broker is the resource claims broker; nil when no tool claims.
	Broker claims.Broker
	// Waker is told of the sessions a release or withdrawal unblocked.
	Waker wake.Waker
	// Log receives what is not returned.
	Log  *slog.Logger
	Turn Turn
}

// Blocked stops the running of a turn's calls at a call the broker did
// not admit: the turn suspends as CauseBlocked, for the broker's poll at
// most, with Fact, and then tells Calls (Suspended).
type Blocked struct {
	block claims.Block
	req   claims.Request
}

func (e *Blocked) Error() string {
	return fmt.Sprintf("turn: tool call %s is %s by %d grant(s)", e.block.ToolCallID, e.block.Outcome, len(e.block.Blockers))
}

// Fact is the suspension's turn.suspended, naming what blocks the call.
func (e *Blocked) Fact() reducer.Fact {
	return reducer.Fact{Type: reducer.TurnSuspended, Block: &e.block}
}

func (c *Calls) actor() reducer.Actor {
	return reducer.Actor{Kind: reducer.ActorAgent, ID: c.Turn.TurnID()}
}

// wake wakes the sessions of ready, which nothing blocks any more.
func (c *Calls) wake(ctx context.Context, ready []claims.Waiter) {
	for _, w := range ready {
		wake.Notify(ctx, c.Waker, c.Log, wake.Wake{Session: w.Session, Reason: wake.Released}, 0)
	}
}

// Claim asks the broker for the claims of call, whose tool (named tool)
// computes them with of, if it declares any (of is not nil). It returns
// the grant and the facts to record with the execution (a claim.granted
// unless the session already holds the grant unquarantined); refused is
// the model's error text for claims the tool computed wrongly (not
// canonical, or heavier than their namespace's capacity): nothing is
// claimed and the call does not run. A call that must wait is a *Blocked.
func (c *Calls) Claim(ctx context.Context, of claims.Func, tool string, call *conversation.Call) (g *claims.Grant, facts []reducer.Fact, refused string, err error) {
	if of == nil {
		return nil, nil, "", nil
	}
	if c.Broker == nil {
		return nil, nil, "", fmt.Errorf("turn: tool %s declares claims and the runner has no claims broker", tool)
	}
	cs, err := of(call.Input)
	if err == nil {
		err = claims.CheckAll(cs)
	}
	if err == nil && len(cs) == 0 {
		return nil, nil, "", nil
	}
	if err != nil {
		return nil, nil, fmt.Sprintf("the call's resource claims are refused: %v", err), nil
	}
	st, session, turn := c.Turn.State(), c.Turn.SessionID(), c.Turn.TurnID()
	req := claims.Request{ID: claims.GrantID(session, call.ID), Owner: st.Owner, Session: session, Turn: turn,
		ToolCall: call.ID, Claims: cs, Deadline: st.Turn.Lease}
	adm, err := c.Broker.Acquire(ctx, req)
	switch {
	case errors.Is(err, claims.ErrInvalid), errors.Is(err, claims.ErrTooHeavy):
		return nil, nil, fmt.Sprintf("the call's resource claims are refused: %v", err), nil
	case err != nil:
		return nil, nil, "", fmt.Errorf("turn: claims for %s: %w", call.ID, err)
	case adm.Outcome != claims.Granted:
		return nil, nil, "", &Blocked{block: claims.Block{ToolCallID: call.ID, Tool: call.Name, Claims: cs,
			Outcome: adm.Outcome, Blockers: claims.Masked(st.Owner, adm.Blockers), Ahead: adm.Ahead}, req: req}
	}
	grant := adm.Grant
	if held, ok := st.Grant(grant.ID); !ok || held.Quarantined {
		facts = []reducer.Fact{{Type: reducer.ClaimGranted, Actor: c.actor(), Turn: turn, Grant: &grant}}
	}
	return &grant, facts, "", nil
}

// Release frees grant g once its call's result is durable: the broker
// first, waking the sessions it unblocked, then the claim.released fact.
// When the broker fails, a soft release leaves the grant held for the next
// settle to release (see Reconcile), and any other returns the error.
func (c *Calls) Release(ctx context.Context, g *claims.Grant, soft bool) error {
	if g == nil {
		return nil
	}
	ready, err := c.Broker.Release(ctx, *g)
	if err != nil && soft {
		c.Log.WarnContext(ctx, "claims not released; the next settle releases them", "grant", g.ID, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("turn: release %s: %w", g.ID, err)
	}
	c.wake(ctx, ready)
	if _, held := c.Turn.State().Grant(g.ID); !held {
		return nil
	}
	return c.Turn.Append(ctx, reducer.Fact{Type: reducer.ClaimReleased, Actor: c.actor(), Turn: c.Turn.TurnID(), Grant: g})
}

// ReleaseCall releases the grant of tool call id, if the session holds one.
func (c *Calls) ReleaseCall(ctx context.Context, id string) error {
	g, ok := c.Turn.State().Grant(claims.GrantID(c.Turn.SessionID(), id))
	if !ok || c.Broker == nil {
		return nil
	}
	return c.Release(ctx, &g, false)
}

// Reconcile releases the grants of this turn's calls that have their
// result: an invocation recorded it and died before the release.
func (c *Calls) Reconcile(ctx context.Context) error {
	if len(c.Turn.State().Grants) == 0 || c.Broker == nil {
		return nil
	}
	pending := map[string]bool{}
	for _, id := range c.Turn.Pending() {
		pending[id] = true
	}
	for _, g := range c.Turn.State().Grants {
		if g.Turn == c.Turn.TurnID() && !pending[g.ToolCall] {
			if err := c.Release(ctx, &g, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// Quarantine is the fact that quarantines the grant of uncertain execution
// ex, to record with the suspension for its verdict; none when the call
// holds no grant or it is quarantined already.
func (c *Calls) Quarantine(ctx context.Context, ex *reducer.Execution) ([]reducer.Fact, error) {
	g, ok := c.Turn.State().Grant(claims.GrantID(c.Turn.SessionID(), ex.ToolCallID))
	if !ok || g.Quarantined || c.Broker == nil {
		return nil, nil
	}
	if err := c.Broker.Quarantine(ctx, g); err != nil {
		return nil, fmt.Errorf("turn: quarantine %s: %w", g.ID, err)
	}
	g.Quarantined = true
	return []reducer.Fact{{Type: reducer.ClaimQuarantined, Actor: c.actor(), Turn: c.Turn.TurnID(), Grant: &g}}, nil
}

// Suspended follows the suspension of the turn for blocked call b, which
// suspended it (suspended) or found it another's (superseded): either
// done, or neither, and the turn stops. A release between the broker's
// answer and the durable suspension found the turn still running, so its
// wake did nothing: once suspended, the turn looks again and, if nothing
// blocks it now, wakes itself at once. A turn ended under it (cancelled
// before the suspension was written) will not ask again: its waiter is
// withdrawn (the store withdraws the waiter of a turn it ends once
// suspended; see Store.Withdraw).
func (c *Calls) Suspended(ctx context.Context, b *Blocked, suspended, superseded bool) {
	if superseded {
		c.withdrawIfEnded(ctx, b.req)
	}
	if !suspended {
		return
	}
	if free, cerr := c.Broker.Admissible(ctx, b.req); cerr == nil && free {
		wake.Notify(ctx, c.Waker, c.Log, wake.Wake{Session: c.Turn.SessionID(), Reason: wake.Released, Seq: c.Turn.State().LastSeq}, 0)
	}
}

// withdrawIfEnded withdraws req's waiter when the turn is over, waking the
// sessions that waited behind it; a turn another invocation took over
// keeps its place. Best effort: the broker's waiter TTL is the backstop.
func (c *Calls) withdrawIfEnded(ctx context.Context, req claims.Request) {
	st, err := c.Turn.Load(ctx)
	if err != nil || (st.Turn != nil && st.Turn.ID == c.Turn.TurnID()) {
		return
	}
	ready, err := c.Broker.Withdraw(ctx, req)
	if err != nil {
		c.Log.WarnContext(ctx, "the ended turn's claims waiter is left to expire", "waiter", req.ID, "err", err)
		return
	}
	c.wake(ctx, ready)
}
