package turn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/claims/claimsession"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// The tool ledger: settling the last step's calls (ledger.settleLast,
// ledger.settle), deciding per call whether it runs now (ledger.admit), and
// running the calls (ledger.runPlans, ledger.runTool), a side effect recorded in
// the execution ledger before it runs (ledgered).

// ledger is the tool ledger: it settles each step's calls, owning what it
// learns of them as it does (the wait_until time, whether it settled once
// this invocation); children and claims settle the calls that are theirs,
// and the endings stop the turn.
type ledger struct {
	*core
	end      ender
	children *children
	claims   *claimsession.Calls
	// callbacks settle the calls that complete by callback.
	callbacks *callbacks
	wait      time.Time // the earliest time a pending wait_until call waits for (see settle)
	settled   bool      // settle ran once this invocation
	// stale are the waiting calls a deploy changed under the turn, found
	// by the settle under way (onchange.go).
	stale []reducer.Stale
}

// settleLast settles the last step's pending calls, if any, and decides
// what stops the turn here: a call cut short, a tool's fatal error, an
// uncertain side effect, approvals to ask for, or a wait_until time ahead.
func (ru *ledger) settleLast(ctx context.Context) (stop bool, out Outcome, err error) {
	if err := ru.claims.Reconcile(ctx); err != nil {
		out, err = ru.end.stopped(ctx, err)
		return true, out, err
	}
	pending := ru.rep.Pending()
	if len(pending) == 0 {
		return false, Outcome{}, nil
	}
	approvals, uncertain, err := ru.settle(ctx, pending)
	if err == nil {
		err = ru.recordStale(ctx)
	}
	fatal, blocked := (*toolFatal)(nil), (*claimsession.Blocked)(nil)
	switch {
	case errors.Is(err, errCut):
		if ctx.Err() != nil {
			return true, ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, ctx.Err())
		}
		// A call ran out of this invocation's time: the next settles it.
		out, err = ru.end.suspend(ctx, reducer.CauseBudget, 0)
	case errors.As(err, &fatal):
		out, err = ru.end.fail(ctx, reducer.FailTool, fatal)
	case errors.As(err, &blocked):
		out, err = ru.end.suspend(ctx, reducer.CauseBlocked, ru.r.Claims.PollEvery(), blocked.Fact())
		ru.claims.Suspended(ctx, blocked, err == nil && out.Kind == Suspended, err == nil && out.Kind == Superseded)
	case err != nil:
		out, err = ru.end.stopped(ctx, err)
	case uncertain != nil:
		var facts []reducer.Fact
		if facts, err = ru.claims.Quarantine(ctx, uncertain); err != nil {
			out, err = ru.end.stopped(ctx, err)
			break
		}
		out, err = ru.end.suspend(ctx, reducer.CauseUncertain, 0, append(facts, reducer.Fact{Type: reducer.TurnSuspended, Execution: uncertain})...)
	case ru.children.Active():
		return ru.children.settleKids(ctx, approvals)
	case len(approvals) > 0:
		out, err = ru.end.suspendForApproval(ctx, approvals)
	case ru.callbacks.waiting:
		// Its wake is due at the first deadline, or now (see suspend).
		out, err = ru.end.suspend(ctx, reducer.CauseCallback, 0)
	case !ru.wait.IsZero():
		// A wait_until call's time is ahead; on resume after it the
		// call runs like any other.
		delay := ru.wait.Sub(ru.now())
		out, err = ru.end.suspend(ctx, reducer.CauseTimer, delay, reducer.Fact{Type: reducer.TurnSuspended, Wake: ru.wait})
	default:
		ru.replay()
		return false, Outcome{}, nil
	}
	return true, out, err
}

// plan is a settled call waiting to run or to have its result emitted.
type plan struct {
	c      *conversation.Call
	t      tool.Tool
	out    chan parts.Part // the result of a read tool running concurrently
	part   parts.Part      // that result, once received (awaitRead)
	ledger bool            // record execution.started before running
	exec   *reducer.Execution
	err    error // errCut or *toolFatal for the read (set before out is sent)
}

// settle resolves the pending calls of the last step, in call order. It
// runs the tools that need no approval or were approved (read-only ones
// concurrently), records denials and invalid input, and returns the
// approvals still to request. A side effect that may already have happened
// and cannot safely rerun is returned as uncertain, and nothing after it is
// settled.
func (ru *ledger) settle(ctx context.Context, pending []*conversation.Call) ([]reducer.Approval, *reducer.Execution, error) {
	var requests []reducer.Approval
	var plans []*plan
	fenced := false // the reads' fence was checked (fenceReads)
	ru.wait = time.Time{}
	ru.callbacks.waiting = false
	ru.children.Reset()
	st := ru.sess.State
	now := ru.now()
	pr := ru.newProgress(ctx) // what the tools emit, on the live flush
	defer pr.stop()
	for _, c := range pending {
		if owned, err := ru.callbacks.settled(ctx, c, now); owned || err != nil {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		t, runs, request := ru.admit(c, st.Turn, now)
		if request != nil {
			requests = append(requests, *request)
		}
		if !runs {
			continue
		}
		p := &plan{c: c, t: t}
		if _, started := st.Turn.Execution(c.ID); t.SideEffect() || started {
			// A call with an execution recorded stays in the ledger even
			// if a deploy made its tool a read since: what it did is
			// known only from the ledger.
			if err := ru.flushBilled(ctx); err != nil {
				return nil, nil, err
			}
			var uncertain *reducer.Execution
			p.exec, p.ledger, uncertain = ledgered(st.Turn, c, t)
			if uncertain != nil {
				// Only an operator can say whether to run it again.
				if err := ru.runPlans(ctx, plans, pr); err != nil {
					return nil, nil, err
				}
				return requests, uncertain, nil
			}
			if p.exec == nil {
				ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: AbandonedText})
				if err := ru.claims.ReleaseCall(ctx, c.ID); err != nil { // the verdict settled its effect
					return nil, nil, err
				}
				continue
			}
		} else {
			if !fenced {
				if err := ru.fenceReads(ctx); err != nil {
					return nil, nil, err
				}
				fenced = true
			}
			p.out = make(chan parts.Part, 1)
			tc := ru.call(c, nil) // read here: the run's state changes while reads run
			go func() {
				part, err := ru.runTool(tool.WithEmitter(ctx, pr.emitter(tc.ID)), t, tc)
				p.err = err
				p.out <- part
			}()
		}
		plans = append(plans, p)
	}
	// An operator's timer.set ended the calls pending as the turn resumed;
	// wait_until calls made after them wait as usual.
	ru.settled = true
	return requests, nil, ru.runPlans(ctx, plans, pr)
}

// admit decides whether pending call c runs now, and returns its tool. A
// call that does not is answered here (an unknown tool, input its schema
// refuses, a denial: its result is emitted), waits for its wait_until time
// (ledger.wait), or needs an approval, returned to be requested. turn is the
// open turn as settle began.
func (ru *ledger) admit(c *conversation.Call, turn *reducer.Turn, now time.Time) (t tool.Tool, runs bool, request *reducer.Approval) {
	if ru.children.Admit(c, turn) {
		return t, false, nil
	}
	t, ok := ru.tools.Get(c.Name)
	if !ok {
		text := fmt.Sprintf("unknown tool %q", c.Name)
		if ru.staleCall(c, reducer.StaleRemoved, text) {
			text += ": the agent was changed since the call was made, and no longer has it; the call did not run"
		}
		ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: text})
		return t, false, nil
	}
	if err := ru.tools.Check(c.Name, c.Input); err != nil {
		text := err.Error()
		if ru.staleCall(c, reducer.StaleSchema, text) {
			text += " (the tool was changed since the call was made; the call did not run)"
		}
		ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: text})
		return t, false, nil
	}
	if c.Name == tool.WaitUntilName {
		until, err := tool.WaitTime(c.Input)
		if err != nil {
			ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: err.Error()})
			return t, false, nil
		}
		if now.Add(reducer.WakeSkew).Before(until) && !(turn.TimerSet && !ru.settled) {
			// Its time is ahead: the turn sleeps until the earliest.
			if ru.wait.IsZero() || until.Before(ru.wait) {
				ru.wait = until
			}
			return t, false, nil
		}
	}
	ans, answered := turn.Answer(c.ID)
	if !answered {
		if !t.Approval(c.Input) {
			return t, true, nil
		}
		return t, false, ru.approvalFor(c, t, c.ApprovalID, now)
	}
	return t, ru.answered(c, t, ans, now, &request), request
}

// approvalFor is the approval request of call c of tool t, with id (a new
// one when empty: its request is emitted), bound to t as it is now.
func (ru *ledger) approvalFor(c *conversation.Call, t tool.Tool, id string, now time.Time) *reducer.Approval {
	if id == "" {
		id = "ap_" + c.ID
		ru.emit(parts.Part{Type: parts.ToolApprovalRequest, ApprovalID: id, ToolCallID: c.ID})
	}
	return &reducer.Approval{ID: id, ToolCallID: c.ID, Tool: c.Name, Input: c.Input,
		Expires: now.Add(ru.lim.ApprovalTTL), Print: ToolPrint(t)}
}

// answered emits what call c's answer ans decided, once, and reports
// whether the call runs: an approval runs it, a denial and a response
// (whose result the model gets) do not, and an edit runs it with the new
// input once its schema holds. An edit whose input the tool's rules send
// to approval, by an actor that may not approve (ans.Reapprove), asks
// again: *request is set.
func (ru *ledger) answered(c *conversation.Call, t tool.Tool, ans reducer.Answer, now time.Time, request **reducer.Approval) bool {
	again := ans.ApprovalID + "_edited"
	if c.ApprovalID == again {
		// Asked again already (a redo after a kill): still waiting.
		*request = ru.approvalFor(c, t, again, now)
		return false
	}
	if changed := ans.ApprovalID + "_changed"; ans.Approves() && ans.Print != "" && ans.Print != ToolPrint(t) {
		// Approved for the tool as it was: its schema, effect or rules
		// changed since (a deploy), so the operator is asked again.
		if c.ApprovalID != changed {
			ru.staleCall(c, reducer.StaleChanged, "approved as "+ans.Print+", the tool is now "+ToolPrint(t)+": asked again as "+changed)
			ru.emit(parts.Part{Type: parts.ToolApprovalRequest, ApprovalID: changed, ToolCallID: c.ID})
		}
		*request = ru.approvalFor(c, t, changed, now)
		return false
	}
	if !c.Answered {
		approved := ans.Decision != reducer.Deny
		ru.emit(parts.Part{Type: parts.ToolApprovalResponse, ApprovalID: ans.ApprovalID, Approved: &approved, Reason: ans.Reason})
		if ans.Decision == reducer.Edit {
			// The replayer folds it: c.Input is the edited input from here.
			ru.emit(conversation.Edited(c.ID, ans.Input, ans.Original, ans.By))
		}
	}
	switch ans.Decision {
	case reducer.Deny:
		ru.emit(parts.Part{Type: parts.ToolOutputDenied, ToolCallID: c.ID})
		return false
	case reducer.Respond:
		ru.emit(parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: c.ID, Output: ans.Output})
		return false
	case reducer.Edit:
		if err := ru.tools.Check(c.Name, c.Input); err != nil {
			ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: "the edited input: " + err.Error()})
			return false
		}
		if ans.Reapprove() && t.Approval(c.Input) {
			ru.emit(parts.Part{Type: parts.ToolApprovalRequest, ApprovalID: again, ToolCallID: c.ID})
			*request = ru.approvalFor(c, t, again, now)
			return false
		}
	}
	return true
}

// BilledGrace is how long a step's read-only tools may run before the step
// the model completed is written ahead of their results. Reads done within
// it have their results written with the step, in its one checkpoint; a
// longer read runs with the step already durable, so that a takeover after
// a kill during the read still counts what the provider billed. A side
// effect's step is written before it runs, whatever its duration.
const BilledGrace = 50 * time.Millisecond

// flushBilled writes the step the model just completed, if the sink still
// holds it: the provider billed that step, and a takeover after a kill
// during a long tool run would otherwise leave no record of it. (A cancel
// is counted either way: this writer's later chunk is refused, and
// recordUnwritten records the step's usage.) Its results follow in the
// checkpoint before the next step.
func (ru *ledger) flushBilled(ctx context.Context) error {
	if !ru.billed {
		return nil
	}
	if err := ru.sink.Flush(ctx); err != nil {
		return err
	}
	ru.billed = false
	return nil
}

// runPlans emits the planned calls' results in call order; their tools
// emit data parts through pr. Side effects run
// here, one at a time, each made durable before and after it runs.
func (ru *ledger) runPlans(ctx context.Context, plans []*plan, pr *progress) error {
	grace := ru.now().Add(BilledGrace)
	for _, p := range plans {
		if p.out != nil {
			if err := ru.awaitRead(ctx, p, grace); err != nil {
				return err
			}
			if p.err != nil {
				return ru.toolStopped(p.part, p.err)
			}
			ru.emit(p.part)
			continue
		}
		grant, facts, refused, err := ru.claims.Claim(ctx, p.t.Claims, p.t.Name, p.c)
		switch {
		case err != nil:
			return err
		case refused != "":
			ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: p.c.ID, ErrorText: refused})
			continue
		}
		if err := ru.recordStart(ctx, p, facts); err != nil {
			return err
		}
		tctx := ru.callbacks.withOpener(tool.WithEmitter(ctx, pr.emitter(p.c.ID)), p)
		part, err := ru.runTool(tctx, p.t, ru.call(p.c, p.exec))
		if p.t.Callback != nil {
			var pending bool
			if part, pending, err = ru.callbacks.returned(ctx, p, part, err); pending {
				// No result: its callback brings it. The token is
				// recorded; the step so far is made durable with the
				// suspension.
				if rerr := ru.claims.Release(ctx, grant, true); rerr != nil {
					return rerr
				}
				continue
			}
		}
		if errors.Is(err, errCut) {
			// No result, the ledger's start stands (and the grant), so
			// the next invocation reruns an idempotent call and asks an
			// operator about any other, a rerun an operator allowed
			// included.
			return err
		}
		ru.emit(part)
		if err != nil && grant == nil {
			return err // a fatal error: the failing turn records the result
		}
		// The result is durable before anything else happens; then its
		// claims are free.
		if ferr := ru.sink.Flush(ctx); ferr != nil {
			return ferr
		}
		if rerr := ru.claims.Release(ctx, grant, true); rerr != nil {
			return rerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// awaitRead waits for read p's result (p.part, p.err), writing the billed
// step first once the reads have run past grace (BilledGrace). Its error is
// that write's.
func (ru *ledger) awaitRead(ctx context.Context, p *plan, grace time.Time) error {
	if ru.billed {
		t := time.NewTimer(grace.Sub(ru.now()))
		defer t.Stop()
		select {
		case p.part = <-p.out:
			return nil
		case <-t.C:
			if err := ru.flushBilled(ctx); err != nil {
				return err
			}
		}
	}
	p.part = <-p.out
	return nil
}

// recordStart makes a side effect's execution durable before it runs: the step
// so far, then its grant and intent. facts are the grant's, recorded even
// for an execution already started (an idempotent rerun).
func (ru *ledger) recordStart(ctx context.Context, p *plan, facts []reducer.Fact) error {
	if p.ledger {
		// The execution ledger: the step so far, then the intent, are
		// durable before the side effect can happen.
		if err := ru.sink.Flush(ctx); err != nil {
			return err
		}
		facts = append(facts, reducer.Fact{
			Type: reducer.ExecutionStarted, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Execution: p.exec,
		})
	}
	if len(facts) == 0 {
		return nil
	}
	return ru.append(ctx, facts...)
}

// toolStopped ends runPlans at a call that stopped the turn: one cut short
// has no result; a fatal one's result is emitted before the turn fails.
func (ru *ledger) toolStopped(part parts.Part, err error) error {
	if !errors.Is(err, errCut) {
		ru.emit(part)
	}
	return err
}

// AbandonedText is the result the model sees for a side effect an operator
// abandoned after it became uncertain.
const AbandonedText = "The outcome of this tool call is unknown: the run stopped while it executed, and an operator chose not to run it again. It may or may not have taken effect."

// ledgered decides from the ledger how a side-effecting call runs: as the
// execution to run, and whether to record it as started first. A call
// never started gets its first execution. One started with no result is
// uncertain: an idempotent one runs again as the same execution (with the
// same idempotency key); after an operator's rerun verdict it runs as the
// call's next attempt, a new execution recorded before it runs, so that
// one verdict allows exactly one more run; after an abandon verdict, exec
// is nil and it does not run; and without a verdict it is returned as
// uncertain, for an operator.
func ledgered(t *reducer.Turn, c *conversation.Call, tl tool.Tool) (exec *reducer.Execution, record bool, uncertain *reducer.Execution) {
	ex, started := t.Execution(c.ID)
	if !started {
		return &reducer.Execution{ID: reducer.ExecutionID(c.ID, 1), ToolCallID: c.ID, Tool: c.Name, Idempotent: tl.Idempotent}, true, nil
	}
	v, settled := t.Verdict(ex.ID)
	switch {
	case settled && v.Verdict == reducer.Abandon:
		return nil, false, nil
	case settled:
		next := ex.Next()
		return &next, true, nil
	case ex.Idempotent:
		return &ex, false, nil
	}
	return nil, false, &ex
}

// errCut reports a tool call cut short by the end of the invocation's time:
// what it did is unknown, so it gets no result and stays pending.
var errCut = errors.New("turn: a tool call was cut short by the invocation's deadline")

// runTool runs one call under its tool's policy (tool.Invoke) and returns
// its output part; c is what the tool is told of its call (see call). A
// tool error is the model's to see, not the turn's failure, unless
// the tool says it is fatal: then the model's part is returned with a
// *toolFatal error, and the turn fails. A call that fails because the
// invocation's deadline (or its end) cut it short has no result: the error
// is errCut. Output over the agent's cap is truncated, and the truncation
// marked.
func (ru *ledger) runTool(ctx context.Context, t tool.Tool, c tool.Call) (parts.Part, error) {
	ctx, cancel := ru.until(ctx, ru.deadline.Add(-ru.lim.Margin))
	defer cancel()
	out, err := ru.invoke(ctx, t, c)
	if err != nil {
		if ctx.Err() != nil {
			return parts.Part{}, errCut
		}
		if errors.Is(err, callback.ErrPending) {
			if t.Callback != nil {
				return parts.Part{}, err // see callbacks.returned
			}
			err = fmt.Errorf("tool %s returned pending, but it does not complete by callback", c.Name)
		}
		part := parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: err.Error()}
		if tool.KindOf(err) == tool.Fatal {
			return part, &toolFatal{tool: c.Name, err: err}
		}
		return part, nil
	}
	if len(out) == 0 || !json.Valid(out) {
		out = mustJSON(string(out))
	}
	if fs := ru.r.Sessions.Files; fs != nil {
		// Files the tool returned go to S3 first; the output recorded
		// names them (internal/files), and the model gets them natively.
		stored, err := fs.StoreToolOutput(ctx, ru.out.Session, ru.agent.Files, out)
		if err != nil {
			return parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: "the tool's files were not kept: " + err.Error()}, nil
		}
		out = stored
	}
	out, _ = tool.Truncate(out, ru.agent.maxToolOutput())
	return parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: c.ID, Output: out}, nil
}

// call is what the tool is told of call c: where it was made, by whose
// session, its execution (exec, the ledger's record of a side effect; nil
// for a read) and approval, and its idempotency key, the same for every run
// of the call.
func (ru *ledger) call(c *conversation.Call, exec *reducer.Execution) tool.Call {
	key := "call_" + c.ID
	tc := tool.Call{ID: c.ID, Name: c.Name, Input: c.Input, Session: ru.out.Session, Turn: ru.out.Turn,
		Step: len(ru.turn.Steps), Owner: ru.sess.State.Owner}
	if exec != nil {
		key, tc.Execution, tc.Attempt = exec.Key(), exec.ID, exec.Try()
	}
	tc.IdempotencyKey = ru.out.Session + "/" + ru.out.Turn + "/" + key
	if t := ru.sess.State.Turn; t != nil {
		if in, ok := t.Edited(c.ID); ok {
			// Another input, another effect: the key changes with it.
			sum := sha256.Sum256(parts.Recorded(in))
			tc.IdempotencyKey += "/edited-" + hex.EncodeToString(sum[:8])
		}
		if a, ok := t.Answer(c.ID); ok && a.Approves() {
			tc.Approval = &tool.Approved{ID: a.ApprovalID, Approver: a.By, Reason: a.Reason}
		}
	}
	return tc
}

// toolFatal is a tool's Fatal error: the turn fails with it.
type toolFatal struct {
	tool string
	err  error
}

func (e *toolFatal) Error() string { return fmt.Sprintf("tool %s: %v", e.tool, e.err) }

func (e *toolFatal) Unwrap() error { return e.err }

// invoke runs tool t for call c, through the tool interceptors.
func (ru *ledger) invoke(ctx context.Context, t tool.Tool, c tool.Call) ([]byte, error) {
	defer ru.timing.tool(time.Now())
	if ru.hooks.tool == nil {
		return tool.Invoke(ctx, t, c)
	}
	return ru.hooks.tool(ctx, intercept.ToolCall{Tool: t, Call: c})
}
