package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// Resource claims around the execution ledger. A side-effecting call whose
// tool declares claims asks the broker (Runner.Claims) before its
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

// Released is the reason of the wake a release sends a session it unblocked.
const Released = wake.Released

// blockedErr stops runPlans at a call the broker did not admit.
type blockedErr struct {
	block claims.Block
	req   claims.Request
}

func (e *blockedErr) Error() string {
	return fmt.Sprintf("turn: tool call %s is %s by %d grant(s)", e.block.ToolCallID, e.block.Outcome, len(e.block.Blockers))
}

// claimer asks the claims broker for a call's claims and releases them;
// the endings suspend a blocked turn.
type claimer struct {
	*core
	end ender
}

// claim asks the broker for the claims of p's call, if its tool declares
// any. It returns the grant and the facts to record with the execution (a
// claim.granted unless the session already holds the grant unquarantined);
// refused is the model's error text for claims the tool computed wrongly
// (not canonical, or heavier than their namespace's capacity): nothing is
// claimed and the call does not run. A call that must wait is a *blockedErr.
func (ru *claimer) claim(ctx context.Context, p *plan) (g *claims.Grant, facts []reducer.Fact, refused string, err error) {
	if p.t.Claims == nil {
		return nil, nil, "", nil
	}
	if ru.r.Claims == nil {
		return nil, nil, "", fmt.Errorf("turn: tool %s declares claims and the runner has no claims broker", p.t.Name)
	}
	cs, err := p.t.Claims(p.c.Input)
	if err == nil {
		err = claims.CheckAll(cs)
	}
	if err == nil && len(cs) == 0 {
		return nil, nil, "", nil
	}
	if err != nil {
		return nil, nil, fmt.Sprintf("the call's resource claims are refused: %v", err), nil
	}
	st := ru.sess.State
	req := claims.Request{ID: claims.GrantID(ru.out.Session, p.c.ID), Owner: st.Owner, Session: ru.out.Session, Turn: ru.out.Turn,
		ToolCall: p.c.ID, Claims: cs, Deadline: st.Turn.Lease}
	adm, err := ru.r.Claims.Acquire(ctx, req)
	switch {
	case errors.Is(err, claims.ErrInvalid), errors.Is(err, claims.ErrTooHeavy):
		return nil, nil, fmt.Sprintf("the call's resource claims are refused: %v", err), nil
	case err != nil:
		return nil, nil, "", fmt.Errorf("turn: claims for %s: %w", p.c.ID, err)
	case adm.Outcome != claims.Granted:
		return nil, nil, "", &blockedErr{block: claims.Block{ToolCallID: p.c.ID, Tool: p.c.Name, Claims: cs,
			Outcome: adm.Outcome, Blockers: claims.Masked(st.Owner, adm.Blockers), Ahead: adm.Ahead}, req: req}
	}
	grant := adm.Grant
	if held, ok := st.Grant(grant.ID); !ok || held.Quarantined {
		facts = []reducer.Fact{{Type: reducer.ClaimGranted, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Grant: &grant}}
	}
	return &grant, facts, "", nil
}

// release frees grant g once its call's result is durable: the broker
// first, waking the sessions it unblocked, then the claim.released fact.
// When the broker fails, a soft release leaves the grant held for the next
// settle to release (see reconcile), and any other returns the error.
func (ru *claimer) release(ctx context.Context, g *claims.Grant, soft bool) error {
	if g == nil {
		return nil
	}
	ready, err := ru.r.Claims.Release(ctx, *g)
	if err != nil && soft {
		ru.r.log().WarnContext(ctx, "claims not released; the next settle releases them", "grant", g.ID, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("turn: release %s: %w", g.ID, err)
	}
	for _, w := range ready {
		wake.Notify(ctx, ru.r.Waker, ru.r.log(), wake.Wake{Session: w.Session, Reason: Released}, 0)
	}
	if _, held := ru.sess.State.Grant(g.ID); !held {
		return nil
	}
	return ru.append(ctx, reducer.Fact{Type: reducer.ClaimReleased, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Grant: g})
}

// releaseCall releases the grant of tool call id, if the session holds one.
func (ru *claimer) releaseCall(ctx context.Context, id string) error {
	g, ok := ru.sess.State.Grant(claims.GrantID(ru.out.Session, id))
	if !ok || ru.r.Claims == nil {
		return nil
	}
	return ru.release(ctx, &g, false)
}

// reconcile releases the grants of this turn's calls that have their
// result: an invocation recorded it and died before the release.
func (ru *claimer) reconcile(ctx context.Context) error {
	if len(ru.sess.State.Grants) == 0 || ru.r.Claims == nil {
		return nil
	}
	pending := map[string]bool{}
	for _, c := range ru.rep.Pending() {
		pending[c.ID] = true
	}
	for _, g := range ru.sess.State.Grants {
		if g.Turn == ru.out.Turn && !pending[g.ToolCall] {
			if err := ru.release(ctx, &g, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// quarantine is the fact that quarantines the grant of uncertain execution
// ex, to record with the suspension for its verdict; none when the call
// holds no grant or it is quarantined already.
func (ru *claimer) quarantine(ctx context.Context, ex *reducer.Execution) ([]reducer.Fact, error) {
	g, ok := ru.sess.State.Grant(claims.GrantID(ru.out.Session, ex.ToolCallID))
	if !ok || g.Quarantined || ru.r.Claims == nil {
		return nil, nil
	}
	if err := ru.r.Claims.Quarantine(ctx, g); err != nil {
		return nil, fmt.Errorf("turn: quarantine %s: %w", g.ID, err)
	}
	g.Quarantined = true
	return []reducer.Fact{{Type: reducer.ClaimQuarantined, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Grant: &g}}, nil
}

// suspendBlocked suspends the turn for a blocked call, to ask again when a
// release wakes it, or after the broker's poll at the latest. A release
// between the broker's answer and the durable suspension found the turn
// still running, so its wake did nothing: once suspended, the turn looks
// again and, if nothing blocks it now, wakes itself at once. A turn ended
// under it (cancelled before the suspension was written) will not ask
// again: its waiter is withdrawn (the store withdraws the waiter of a turn
// it ends once suspended; see session.Store.Claims).
func (ru *claimer) suspendBlocked(ctx context.Context, b *blockedErr) (Outcome, error) {
	out, err := ru.end.suspend(ctx, reducer.CauseBlocked, ru.r.Claims.PollEvery(), reducer.Fact{Type: reducer.TurnSuspended, Block: &b.block})
	if err == nil && out.Kind == Superseded {
		ru.withdrawIfEnded(ctx, b.req)
	}
	if err != nil || out.Kind != Suspended {
		return out, err
	}
	if free, cerr := ru.r.Claims.Admissible(ctx, b.req); cerr == nil && free {
		wake.Notify(ctx, ru.r.Waker, ru.r.log(), wake.Wake{Session: ru.out.Session, Reason: Released, Seq: ru.sess.State.LastSeq}, 0)
	}
	return out, nil
}

// withdrawIfEnded withdraws req's waiter when the turn is over, waking the
// sessions that waited behind it; a turn another invocation took over
// keeps its place. Best effort: the broker's waiter TTL is the backstop.
func (ru *claimer) withdrawIfEnded(ctx context.Context, req claims.Request) {
	sess, err := ru.r.Sessions.Load(ctx, ru.out.Session)
	if err != nil || (sess.State.Turn != nil && sess.State.Turn.ID == ru.out.Turn) {
		return
	}
	ready, err := ru.r.Claims.Withdraw(ctx, req)
	if err != nil {
		ru.r.log().WarnContext(ctx, "the ended turn's claims waiter is left to expire", "waiter", req.ID, "err", err)
		return
	}
	for _, w := range ready {
		wake.Notify(ctx, ru.r.Waker, ru.r.log(), wake.Wake{Session: w.Session, Reason: Released}, 0)
	}
}

// GrantFate is the broker's Fate for a session store: what becomes of a
// grant past its authorization deadline that blocks someone. A grant whose
// holder still runs under a live lease is kept; one the holder's facts do
// not record (its execution never started, or an operator released it) is
// released; one recorded for an execution that is uncertain, or whose turn
// is over, is quarantined; any other is kept for its holder's next
// invocation to settle. A grant whose holder is not found — deleted (its
// facts, which said whether its effect ran, are gone), being deleted, or
// never found at all — is orphaned: no fact can say its effect is over,
// so it fails closed and only an operator's release of the orphan frees
// it (session.Store.ReleaseOrphan). Nor is a holder of another owner than
// the grant's trusted to speak for it.
func GrantFate(ss *session.Store) func(context.Context, claims.Grant) (claims.Fate, error) {
	return func(ctx context.Context, g claims.Grant) (claims.Fate, error) {
		sess, err := ss.Load(ctx, g.Session)
		if errors.Is(err, session.ErrNotFound) {
			return claims.Orphan, nil
		}
		if err != nil {
			return claims.Keep, err
		}
		st := sess.State
		if g.Owner != "" && st.Owner != g.Owner {
			return claims.Orphan, nil
		}
		t := st.Turn
		if st.Status == reducer.Running && t != nil && ss.Clock().Before(t.Lease) {
			return claims.Keep, nil
		}
		held, ok := st.Grant(g.ID)
		switch {
		case !ok:
			return claims.Release, nil
		case held.Quarantined || t == nil || t.ID != g.Turn:
			return claims.Quarantine, nil
		case t.Uncertain != nil && t.Uncertain.ToolCallID == g.ToolCall:
			return claims.Quarantine, nil
		}
		return claims.Keep, nil
	}
}
