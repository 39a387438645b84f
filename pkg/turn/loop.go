package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/pkg/awsenv"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/model"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/retry"
	"github.com/baton-run/baton/pkg/session"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/tool"
	"github.com/baton-run/baton/pkg/wake"
)

// loop runs steps until the turn ends or this invocation must stop. Each
// iteration settles the tool calls of the last step, catches up with the
// messages posted meanwhile (steer.go), checks the turn's caps and time,
// compacts the context if it must, steers the waiting messages in, then
// checkpoints and asks the model for the next step. The checkpoint is one chunk holding the
// step and its tool results: one durable write per step.
func (ru *run) loop(ctx context.Context) (Outcome, error) {
	var spent time.Duration // time spent in model steps this invocation
	tries := 0              // failed tries of the step being asked for
	var fault *model.Error  // the last retryable error of those tries
	if err := ru.offer(ctx); err != nil {
		return ru.unoffered(ctx, err)
	}
	for {
		ru.replay()
		if pending := ru.rep.Pending(); len(pending) > 0 {
			approvals, uncertain, err := ru.settle(ctx, pending)
			if errors.Is(err, errCut) {
				if ctx.Err() != nil {
					return ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, ctx.Err())
				}
				// A call ran out of this invocation's time: the next settles it.
				return ru.suspend(ctx, reducer.CauseBudget, 0)
			}
			if fatal := (*toolFatal)(nil); errors.As(err, &fatal) {
				return ru.fail(ctx, reducer.FailTool, fatal)
			}
			if err != nil {
				return ru.stopped(ctx, err)
			}
			if uncertain != nil {
				return ru.suspend(ctx, reducer.CauseUncertain, 0, reducer.Fact{Type: reducer.TurnSuspended, Execution: uncertain})
			}
			if len(approvals) > 0 {
				return ru.suspendForApproval(ctx, approvals)
			}
			if !ru.wait.IsZero() {
				// A wait_until call's time is ahead; on resume after it the
				// call runs like any other.
				delay := ru.wait.Sub(ru.r.Sessions.Clock())
				return ru.suspend(ctx, reducer.CauseTimer, delay, reducer.Fact{Type: reducer.TurnSuspended, Wake: ru.wait})
			}
			ru.replay()
		}
		// A step boundary: messages posted meanwhile may end the turn or
		// be steered into it (see steer.go).
		if err := ru.catchUp(ctx); err != nil {
			return ru.stopped(ctx, err)
		}
		if ru.sess.State.Turn.Interrupt {
			return ru.interrupt(ctx)
		}
		// The model has answered all it was given; messages waiting to be
		// steered in are delivered just before the next step, so one the
		// turn has no step left for starts the next turn instead.
		answered := false
		if last := ru.turn.Last(); last != nil && len(last.Calls) == 0 && !steered(ru.turn) {
			answered = true
		}
		capped := len(ru.turn.Steps) >= ru.lim.MaxStepsPerTurn
		reached := ru.overSpend()
		if answered && (len(ru.sess.State.Turn.Steer) == 0 || capped || reached != nil) {
			return ru.complete(ctx)
		}
		if capped {
			return ru.fail(ctx, reducer.FailLimit, fmt.Errorf("the turn reached its cap of %d steps", ru.lim.MaxStepsPerTurn))
		}
		if reached != nil {
			if ru.lim.Spend.Fail {
				return ru.fail(ctx, reducer.FailLimit, errors.New(reached.String()))
			}
			return ru.suspend(ctx, reducer.CauseLimit, 0, reducer.Fact{Type: reducer.TurnSuspended, Limit: reached})
		}
		if ru.out.Steps >= ru.lim.MaxStepsPerInvocation || !ru.fits(spent, 0) {
			if fault != nil && fault.Transient() {
				// The step being redone ran out of time: the fault
				// outlasted the step's time.
				return ru.suspendFault(ctx, fault)
			}
			return ru.suspend(ctx, reducer.CauseBudget, 0)
		}
		if stop, out, err := ru.compact(ctx, spent); stop {
			return out, err
		}
		if err := ru.deliver(ctx); err != nil {
			return ru.stopped(ctx, err)
		}
		// The checkpoint. A buffer holding only the turn's start or
		// resumption markers waits for the first step, so a step costs one
		// write.
		if ru.dirty {
			if err := ru.sink.Flush(ctx); err != nil {
				return ru.stopped(ctx, err)
			}
			ru.dirty = false
		}
		began := time.Now()
		parts, err := ru.runStep(ctx)
		spent += time.Since(began)
		var fe *flushError
		var me *model.Error
		switch {
		case err == nil:
			tries, fault = 0, nil
		case errors.As(err, &fe):
			return ru.stopped(ctx, fe.err)
		case ctx.Err() != nil:
			// The invocation itself is ending (a process death, in tests):
			// write nothing more; the last checkpoint stands.
			return ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, ctx.Err())
		case errors.Is(err, context.DeadlineExceeded):
			// A runaway step hit the hard deadline: drop it and suspend.
			ru.r.log().WarnContext(ctx, "step aborted at the deadline", "session", ru.out.Session, "turn", ru.out.Turn)
			if fault != nil && fault.Transient() {
				// The redo of a faulted step ran out of time: the fault
				// outlasted the step's time.
				return ru.suspendFault(ctx, fault)
			}
			return ru.suspend(ctx, reducer.CauseBudget, 0)
		case errors.As(err, &me) && me.Retryable():
			// Nothing of the failed try is kept: its parts were never
			// emitted, or were marked abandoned. Redo it, or stop.
			tries, fault = tries+1, me
			redo, werr := ru.backoff(ctx, me, tries, spent)
			switch {
			case werr != nil:
				return ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, werr)
			case redo:
				continue
			case me.Transient():
				return ru.suspendFault(ctx, me)
			case tries < ru.lim.ModelRetry.Attempts:
				// Out of time, not out of tries: the next invocation tries again.
				return ru.suspend(ctx, reducer.CauseBudget, 0)
			default:
				return ru.fail(ctx, reducer.FailModel, fmt.Errorf("the model's output stayed unusable after %d tries: %w", tries, err))
			}
		default:
			return ru.fail(ctx, reducer.FailModel, modelFailure(err))
		}
		ru.emit(parts...)
		ru.out.Steps++
	}
}

// overSpend names the spend cap the turn has reached, if any: the turn's
// usage so far, or the session's (its ended turns plus this turn so far),
// against the agent's caps overridden by those operators raised.
func (ru *run) overSpend() *reducer.Limit {
	st := ru.sess.State
	u := ru.turn.Usage()
	if l := ru.lim.Spend.Turn.Over(st.Turn.Caps).Reach(reducer.ScopeTurn, u); l != nil {
		return l
	}
	return ru.lim.Spend.Session.Over(st.Caps).Reach(reducer.ScopeSession, st.Usage.Sub(st.Turn.Usage).Add(u))
}

// fits reports whether another step, as long as the average so far, would
// end before the deadline minus the margin after waiting wait.
func (ru *run) fits(spent, wait time.Duration) bool {
	var avg time.Duration
	if ru.out.Steps > 0 {
		avg = spent / time.Duration(ru.out.Steps)
	}
	return time.Now().Add(wait + avg).Before(ru.deadline.Add(-ru.lim.Margin))
}

// backoff decides whether a step that failed with a retryable error for
// the tries-th time is tried again in this invocation, and waits before it
// is. It says no when the agent's tries are used up, when the provider asks
// for a longer wait than MaxBackoff, or when the wait and another step
// would not end within the step's time. Bad output is tried again at once:
// waiting does not change a model's answer. The error is ctx's, when it
// ended while waiting.
func (ru *run) backoff(ctx context.Context, me *model.Error, tries int, spent time.Duration) (bool, error) {
	p := ru.lim.ModelRetry
	if tries >= p.Attempts || me.RetryAfter > p.MaxBackoff {
		return false, nil
	}
	var wait time.Duration
	if me.Transient() {
		wait = p.Wait(tries, me.RetryAfter)
	}
	if !ru.fits(spent, wait) {
		return false, nil
	}
	ru.r.log().WarnContext(ctx, "model step failed; redoing it", "session", ru.out.Session, "turn", ru.out.Turn,
		"kind", me.Kind, "status", me.Status, "try", tries, "wait", wait, "err", me)
	if wait <= 0 {
		return true, nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// suspendFault suspends a turn whose model fault outlasted the step's
// tries or time, with a wake delayed by the agent's policy. The delay grows
// with each such suspension in a row (a completed step breaks the row);
// past the policy's Suspensions the turn fails instead.
func (ru *run) suspendFault(ctx context.Context, me *model.Error) (Outcome, error) {
	cause := reducer.CauseModelUnavailable
	if me.Kind == model.Throttled {
		cause = reducer.CauseThrottled
	}
	return ru.suspendFor(ctx, cause, me.RetryAfter, reducer.FailModel, "the model stayed unavailable", me)
}

// suspendFor suspends the turn for a fault cause (reducer.Cause.Fault) as
// suspendFault does, or fails it as kind, saying what stayed unavailable.
func (ru *run) suspendFor(ctx context.Context, cause reducer.Cause, retryAfter time.Duration, kind reducer.FailureKind, what string, err error) (Outcome, error) {
	p := ru.lim.ModelRetry
	n := 1
	if t := ru.sess.State.Turn; t != nil && ru.out.Steps == 0 {
		n = t.Faults + 1
	}
	if n > p.Suspensions {
		return ru.fail(ctx, kind, fmt.Errorf("%s through %d suspensions of the turn: %w", what, n-1, err))
	}
	delay := p.WakeAfter(n, retryAfter)
	ru.r.log().WarnContext(ctx, "fault outlasted the step; suspending the turn", "session", ru.out.Session, "turn", ru.out.Turn,
		"cause", cause, "suspension", n, "wake", delay, "err", err)
	return ru.suspend(ctx, cause, delay, reducer.Fact{Type: reducer.TurnSuspended, Faults: n, Wake: ru.r.Sessions.Clock().Add(delay)})
}

// modelFailure says in plain words what a model error that cannot succeed
// on a retry means for whoever reads the failed turn.
func modelFailure(err error) error {
	switch model.KindOf(err) {
	case model.Auth:
		return fmt.Errorf("the model provider refused the credentials (check the API key or the role's permissions): %w", err)
	case model.ContextTooLong:
		return fmt.Errorf("the conversation no longer fits the model's context window: %w", err)
	case model.InvalidRequest:
		return fmt.Errorf("the model provider rejected the request: %w", err)
	}
	return err
}

// step asks the model for one step and returns its parts, from start-step
// to finish-step. Nothing reaches the sink unless the step completes.
func (ru *run) step(ctx context.Context) ([]streams.Part, error) {
	ctx, cancel := context.WithDeadline(ctx, ru.deadline.Add(-ru.lim.Margin))
	defer cancel()
	req := ru.request(ru.sess.History)
	n := len(ru.turn.Steps)
	so := ru.turn.Usage() // the turn's usage before this step
	so.Steps++
	parts := []streams.Part{{Type: streams.StartStep}}
	var open streams.PartType // the open block's start type, if any
	var blockID, signature string
	blocks := 0
	closeBlock := func() {
		switch open {
		case streams.TextStart:
			parts = append(parts, streams.Part{Type: streams.TextEnd, ID: blockID})
		case streams.ReasoningStart:
			p := streams.Part{Type: streams.ReasoningEnd, ID: blockID}
			if signature != "" {
				p.ProviderMetadata = conversation.SignatureMetadata(signature)
			}
			parts = append(parts, p)
		}
		open, signature = "", ""
	}
	openBlock := func(t streams.PartType) {
		if open == t {
			return
		}
		closeBlock()
		open = t
		blockID = fmt.Sprintf("s%d-b%d", n, blocks)
		blocks++
		parts = append(parts, streams.Part{Type: t, ID: blockID})
	}
	calls := 0
	finished := false
	// Live flushing: parts of an unfinished step reach the stream as they
	// come, at most once per LiveFlush: the first event after a quiet
	// LiveFlush flushes at once (leading edge), later ones when the
	// interval ends, by a timer, even while the model pauses (trailing
	// edge). A step cut short then leaves a partial step in the stream,
	// marked abandoned and redone.
	pushed := 0
	var live *streams.Live
	if ru.lim.LiveFlush > 0 {
		live = ru.sink.Live(ru.lim.LiveFlush)
		defer live.Stop() // a failure it reports was reported by push or lost with the step
	}
	push := func() error {
		if live == nil {
			return nil
		}
		ru.emit(parts[pushed:]...)
		pushed = len(parts)
		if err := live.Poke(ctx); err != nil {
			if ctx.Err() != nil {
				// The step's time ran out while its parts were being
				// written: the step is cut short, the stream is not broken.
				// The parts stay buffered for the suspension's flush.
				return fmt.Errorf("step %d: a live flush ran into the step's deadline: %w", n, ctx.Err())
			}
			return &flushError{err}
		}
		return nil
	}
	abandon := func(err error) ([]streams.Part, error) {
		if pushed > 0 {
			ru.emit(streams.Part{Type: streams.DataAbandoned, Data: json.RawMessage(`{"reason":"the step was cut short and will be redone"}`)})
		}
		return nil, err
	}
	for ev, err := range ru.stream(ctx, ru.agent.Model, req) {
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				err = fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
			return abandon(fmt.Errorf("step %d: %w", n, err))
		}
		switch ev.Type {
		case model.ReasoningDelta:
			openBlock(streams.ReasoningStart)
			parts = append(parts, streams.Part{Type: streams.ReasoningDelta, ID: blockID, Delta: ev.Text})
		case model.ReasoningSignature:
			if open == streams.ReasoningStart {
				signature += ev.Text
			}
		case model.TextDelta:
			openBlock(streams.TextStart)
			parts = append(parts, streams.Part{Type: streams.TextDelta, ID: blockID, Delta: ev.Text})
		case model.ToolCall:
			closeBlock()
			parts = append(parts, streams.Part{Type: streams.ToolInputAvailable, ToolCallID: CallID(ru.out.Turn, n, calls),
				ToolName: ev.Call.Name, Input: normalizeInput(ev.Call.Input), ProviderMetadata: conversation.CallMetadata(ev.Call.ID)})
			calls++
		case model.Finish:
			closeBlock()
			u := reducer.Usage{InputTokens: ev.Usage.InputTokens, OutputTokens: ev.Usage.OutputTokens}
			if p := ru.agent.Price; p != nil {
				u.CostMicroUSD = p.Cost(u.InputTokens, u.OutputTokens)
			}
			parts = append(parts,
				streams.Part{Type: streams.MessageMetadata, MessageMetadata: conversation.StepMetadata(u, so.Add(u), string(ev.Stop))},
				streams.Part{Type: streams.FinishStep})
			finished = true
		}
		if err := push(); err != nil {
			if fe := (*flushError)(nil); errors.As(err, &fe) {
				return nil, err
			}
			return abandon(err)
		}
	}
	if !finished {
		if err := ctx.Err(); err != nil {
			return abandon(fmt.Errorf("step %d: %w", n, err))
		}
		return abandon(&model.Error{Kind: model.Other, Err: fmt.Errorf("step %d: the stream ended without a finish", n)})
	}
	if live != nil {
		ru.emit(parts[pushed:]...)
		if err := live.Stop(); err != nil && ctx.Err() == nil {
			return nil, &flushError{err}
		}
		return nil, nil
	}
	return parts, nil
}

// CallID is baton's id for call c of step n of a turn:
// tc_<the turn id without its "turn_" prefix>_<n>_<c>, unique within the
// session whatever id the provider gave the call. It is derived from durable
// state, so a step redone after a crash mints the same ids. Approvals,
// executions and idempotency keys are keyed by it.
func CallID(turn string, n, c int) string {
	return "tc_" + strings.TrimPrefix(turn, "turn_") + "_" + strconv.Itoa(n) + "_" + strconv.Itoa(c)
}

// flushError is a failed write of a live flush: the stream's, not the
// model's.
type flushError struct{ err error }

func (e *flushError) Error() string { return e.err.Error() }
func (e *flushError) Unwrap() error { return e.err }

// normalizeInput compacts a tool call's JSON input, so the same call always
// has the same bytes, without decoding it: numbers and key order stay as the
// model wrote them. Input that is not JSON is kept as a JSON string; the
// tool's schema check then rejects it.
func normalizeInput(in json.RawMessage) json.RawMessage {
	if len(in) == 0 {
		return json.RawMessage(`{}`)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, in); err != nil {
		return mustJSON(string(in))
	}
	return b.Bytes()
}

// plan is a settled call waiting to run or to have its result emitted.
type plan struct {
	c      *conversation.Call
	t      tool.Tool
	out    chan streams.Part // the result of a read tool running concurrently
	ledger bool              // record execution.started before running
	exec   *reducer.Execution
	err    error // errCut or *toolFatal for the read (set before out is sent)
}

// settle resolves the pending calls of the last step, in call order. It
// runs the tools that need no approval or were approved (read-only ones
// concurrently), records denials and invalid input, and returns the
// approvals still to request. A side effect that may already have happened
// and cannot safely rerun is returned as uncertain, and nothing after it is
// settled.
func (ru *run) settle(ctx context.Context, pending []*conversation.Call) ([]reducer.Approval, *reducer.Execution, error) {
	var requests []reducer.Approval
	var plans []*plan
	ru.wait = time.Time{}
	st := ru.sess.State
	now := ru.r.Sessions.Clock()
	for _, c := range pending {
		t, ok := ru.tools.Get(c.Name)
		if !ok {
			ru.emit(streams.Part{Type: streams.ToolOutputError, ToolCallID: c.ID, ErrorText: fmt.Sprintf("unknown tool %q", c.Name)})
			continue
		}
		if err := ru.tools.Check(c.Name, c.Input); err != nil {
			ru.emit(streams.Part{Type: streams.ToolOutputError, ToolCallID: c.ID, ErrorText: err.Error()})
			continue
		}
		if c.Name == tool.WaitUntilName {
			until, err := tool.WaitTime(c.Input)
			if err != nil {
				ru.emit(streams.Part{Type: streams.ToolOutputError, ToolCallID: c.ID, ErrorText: err.Error()})
				continue
			}
			if now.Add(reducer.WakeSkew).Before(until) && !(st.Turn.TimerSet && !ru.settled) {
				// Its time is ahead: the turn sleeps until the earliest.
				if ru.wait.IsZero() || until.Before(ru.wait) {
					ru.wait = until
				}
				continue
			}
		}
		if t.Approval(c.Input) {
			ans, answered := st.Turn.Answer(c.ID)
			if !answered {
				id := c.ApprovalID
				if id == "" {
					id = "ap_" + c.ID
					ru.emit(streams.Part{Type: streams.ToolApprovalRequest, ApprovalID: id, ToolCallID: c.ID})
				}
				requests = append(requests, reducer.Approval{ID: id, ToolCallID: c.ID, Tool: c.Name, Input: c.Input,
					Expires: now.Add(ru.lim.ApprovalTTL)})
				continue
			}
			if !c.Answered {
				approved := ans.Decision == reducer.Approve
				ru.emit(streams.Part{Type: streams.ToolApprovalResponse, ApprovalID: ans.ApprovalID, Approved: &approved, Reason: ans.Reason})
			}
			if ans.Decision == reducer.Deny {
				ru.emit(streams.Part{Type: streams.ToolOutputDenied, ToolCallID: c.ID})
				continue
			}
		}
		if err := ru.flushBilled(ctx); err != nil {
			return nil, nil, err
		}
		p := &plan{c: c, t: t}
		if t.SideEffect() {
			var uncertain *reducer.Execution
			p.exec, p.ledger, uncertain = ledgered(st.Turn, c, t)
			if uncertain != nil {
				// Only an operator can say whether to run it again.
				if err := ru.runPlans(ctx, plans); err != nil {
					return nil, nil, err
				}
				return requests, uncertain, nil
			}
			if p.exec == nil {
				ru.emit(streams.Part{Type: streams.ToolOutputError, ToolCallID: c.ID, ErrorText: AbandonedText})
				continue
			}
		} else {
			p.out = make(chan streams.Part, 1)
			tc := ru.call(c, nil) // read here: the run's state changes while reads run
			go func() {
				part, err := ru.runTool(ctx, t, tc)
				p.err = err
				p.out <- part
			}()
		}
		plans = append(plans, p)
	}
	// An operator's timer.set ended the calls pending as the turn resumed;
	// wait_until calls made after them wait as usual.
	ru.settled = true
	return requests, nil, ru.runPlans(ctx, plans)
}

// flushBilled writes the step the model just completed, if the sink still
// holds it, before its first tool runs: the provider billed that step, and
// a cancel or a takeover during the tool run would otherwise leave no
// record of it (the canceller closes the stream after the chunks it read,
// and this writer's later chunk is refused as stale). Its results follow
// in the checkpoint before the next step.
func (ru *run) flushBilled(ctx context.Context) error {
	if !ru.billed {
		return nil
	}
	if err := ru.sink.Flush(ctx); err != nil {
		return err
	}
	ru.billed = false
	return nil
}

// runPlans emits the planned calls' results in call order. Side effects run
// here, one at a time, each made durable before and after it runs.
func (ru *run) runPlans(ctx context.Context, plans []*plan) error {
	for _, p := range plans {
		if p.out != nil {
			part := <-p.out
			if p.err != nil {
				return ru.toolStopped(part, p.err)
			}
			ru.emit(part)
			continue
		}
		if p.ledger {
			// The execution ledger: the step so far, then the intent, are
			// durable before the side effect can happen.
			if err := ru.sink.Flush(ctx); err != nil {
				return err
			}
			err := ru.append(ctx, reducer.Fact{
				Type: reducer.ExecutionStarted, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Execution: p.exec,
			})
			if err != nil {
				return err
			}
		}
		part, err := ru.runTool(ctx, p.t, ru.call(p.c, p.exec))
		if err != nil {
			// errCut: no result, the ledger's start stands, so the next
			// invocation reruns an idempotent call and asks an operator
			// about any other, a rerun an operator allowed included.
			return ru.toolStopped(part, err)
		}
		ru.emit(part)
		// The result is durable before anything else happens.
		if err := ru.sink.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// toolStopped ends runPlans at a call that stopped the turn: one cut short
// has no result; a fatal one's result is emitted before the turn fails.
func (ru *run) toolStopped(part streams.Part, err error) error {
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
func (ru *run) runTool(ctx context.Context, t tool.Tool, c tool.Call) (streams.Part, error) {
	ctx, cancel := context.WithDeadline(ctx, ru.deadline.Add(-ru.lim.Margin))
	defer cancel()
	out, err := ru.invoke(ctx, t, c)
	if err != nil {
		if ctx.Err() != nil {
			return streams.Part{}, errCut
		}
		part := streams.Part{Type: streams.ToolOutputError, ToolCallID: c.ID, ErrorText: err.Error()}
		if tool.KindOf(err) == tool.Fatal {
			return part, &toolFatal{tool: c.Name, err: err}
		}
		return part, nil
	}
	if len(out) == 0 || !json.Valid(out) {
		out = mustJSON(string(out))
	}
	out, _ = tool.Truncate(out, ru.agent.maxToolOutput())
	return streams.Part{Type: streams.ToolOutputAvailable, ToolCallID: c.ID, Output: out}, nil
}

// call is what the tool is told of call c: where it was made, by whose
// session, its execution (exec, the ledger's record of a side effect; nil
// for a read) and approval, and its idempotency key, the same for every run
// of the call.
func (ru *run) call(c *conversation.Call, exec *reducer.Execution) tool.Call {
	key := "call_" + c.ID
	tc := tool.Call{ID: c.ID, Name: c.Name, Input: c.Input, Session: ru.out.Session, Turn: ru.out.Turn,
		Step: len(ru.turn.Steps), Owner: ru.sess.State.Owner}
	if exec != nil {
		key, tc.Execution, tc.Attempt = exec.Key(), exec.ID, exec.Try()
	}
	tc.IdempotencyKey = ru.out.Session + "/" + ru.out.Turn + "/" + key
	if t := ru.sess.State.Turn; t != nil {
		if a, ok := t.Answer(c.ID); ok && a.Decision == reducer.Approve {
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

// suspend checkpoints the turn with a suspension marker, records the
// suspension, and for a cause that needs no operator (not approval,
// uncertain or limit), sends the wake.
func (ru *run) suspend(ctx context.Context, cause reducer.Cause, delay time.Duration, extra ...reducer.Fact) (Outcome, error) {
	ru.emit(streams.Part{Type: streams.DataSuspended, Data: mustJSON(map[string]string{"cause": string(cause)})})
	if err := ru.sink.Flush(ctx); err != nil {
		return ru.stopped(ctx, err)
	}
	last := reducer.Fact{Type: reducer.TurnSuspended}
	if n := len(extra); n > 0 && extra[n-1].Type == reducer.TurnSuspended {
		last, extra = extra[n-1], extra[:n-1]
	}
	last.Actor, last.Turn, last.Cause = agentActor(ru.out.Turn), ru.out.Turn, cause
	// The stream is durable up to here: its steps' usage counts now.
	u := ru.rep.Turn().Usage()
	last.Usage = &u
	facts := append(extra, last)
	if err := ru.append(ctx, facts...); err != nil {
		return ru.stopped(ctx, err)
	}
	next := ru.sess.State
	ru.out.Kind, ru.out.Cause = Suspended, cause
	if cause != reducer.CauseApproval && cause != reducer.CauseUncertain && cause != reducer.CauseLimit {
		wake.Notify(ctx, ru.r.Waker, ru.r.log(), wake.Wake{Session: ru.out.Session, Reason: wake.ForCause(cause), Seq: next.LastSeq}, delay)
	}
	return ru.out, nil
}

func (ru *run) suspendForApproval(ctx context.Context, approvals []reducer.Approval) (Outcome, error) {
	facts := make([]reducer.Fact, len(approvals))
	for i := range approvals {
		facts[i] = reducer.Fact{Type: reducer.ApprovalRequested, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Approval: &approvals[i]}
	}
	return ru.suspend(ctx, reducer.CauseApproval, 0, facts...)
}

// complete closes the stream, then records the outcome with a snapshot.
func (ru *run) complete(ctx context.Context) (Outcome, error) {
	ru.emit(streams.Part{Type: streams.Finish, FinishReason: "stop"})
	if err := ru.sink.Close(ctx, streams.Completed); err != nil {
		return ru.stopped(ctx, err)
	}
	return ru.record(ctx, reducer.Fact{Type: reducer.TurnCompleted}, Completed)
}

// fail closes the stream with an error part and records the failure.
func (ru *run) fail(ctx context.Context, kind reducer.FailureKind, cause error) (Outcome, error) {
	ru.emit(streams.Part{Type: streams.Error, ErrorText: cause.Error()}, streams.Part{Type: streams.Finish, FinishReason: "error"})
	if err := ru.sink.Close(ctx, streams.Failed); err != nil {
		return ru.stopped(ctx, err)
	}
	f := &reducer.Failure{Kind: kind, Error: cause.Error()}
	ru.out.Failure = f
	return ru.record(ctx, reducer.Fact{Type: reducer.TurnFailed, Failure: f}, Failed)
}

// finishClosed records the outcome of a turn whose stream an earlier
// invocation closed before it died.
func (ru *run) finishClosed(ctx context.Context, status streams.Status) (Outcome, error) {
	switch status {
	case streams.Completed:
		return ru.record(ctx, reducer.Fact{Type: reducer.TurnCompleted}, Completed)
	case streams.Interrupted:
		return ru.record(ctx, reducer.Fact{Type: reducer.TurnInterrupted}, Interrupted)
	}
	f := &reducer.Failure{Kind: reducer.FailInternal, Error: "the stream was closed as " + string(status) + " before the outcome was recorded"}
	ru.out.Failure = f
	return ru.record(ctx, reducer.Fact{Type: reducer.TurnFailed, Failure: f}, Failed)
}

func (ru *run) record(ctx context.Context, f reducer.Fact, kind Kind) (Outcome, error) {
	ru.replay()
	u := ru.turn.Usage()
	f.Actor, f.Turn, f.Usage = agentActor(ru.out.Turn), ru.out.Turn, &u
	err := ru.retry(ctx, func() error {
		_, err := ru.r.Sessions.End(ctx, ru.sess, ru.turn, f)
		return err
	})
	if err != nil {
		return ru.stopped(ctx, err)
	}
	ru.out.Kind, ru.out.Usage = kind, u
	return ru.out, nil
}

// append commits the run's facts; see retry.
func (ru *run) append(ctx context.Context, facts ...reducer.Fact) error {
	return ru.retry(ctx, func() error {
		next, err := ru.r.Sessions.Append(ctx, ru.out.Session, ru.sess.State, facts...)
		if err == nil {
			ru.sess.State = next
		}
		return err
	})
}

// retry runs a commit of the run's own facts. Losing the compare-and-set
// to a fact that leaves the turn in this invocation's hands — a message
// posted meanwhile — is no reason to stop: reload and commit again, within
// commitPolicy. If the turn was cancelled or taken over, the conflict stands.
func (ru *run) retry(ctx context.Context, commit func() error) error {
	theirs := false // the turn left this invocation's hands
	return retry.Do(ctx, commitPolicy, func() error {
		err := commit()
		if !errors.Is(err, session.ErrConflict) {
			return err
		}
		sess, lerr := ru.r.Sessions.Load(ctx, ru.out.Session)
		if lerr != nil {
			theirs = true // not known to be ours: stop
			return errors.Join(err, lerr)
		}
		if !sess.State.Holds(ru.sess.State.Turn) {
			theirs = true
			return err
		}
		ru.sess.State = sess.State
		return err
	}, func(err error) bool { return !theirs && errors.Is(err, session.ErrConflict) })
}

// commitPolicy bounds retry like the session store's own retry of lost
// races: session.RetryBudget in all (the run's deadline bounds it further),
// full jitter from 10 ms to 1 s. A run that still loses stops as
// superseded; the tick reaps the turn when its lease runs out.
var commitPolicy = session.RetryPolicy

// closeIfEnded closes the stream when the turn was ended by someone else (a
// cancel) rather than taken over by another invocation, which owns the
// stream now and must not lose it.
func (ru *run) closeIfEnded(ctx context.Context) {
	sess, err := ru.r.Sessions.Load(ctx, ru.out.Session)
	if err != nil || (sess.State.Turn != nil && sess.State.Turn.ID == ru.out.Turn) {
		return
	}
	if err := ru.r.Sessions.CloseStream(ctx, ru.sink, streams.Cancelled, "cancelled"); err != nil {
		ru.r.log().WarnContext(ctx, "close the stream of an ended turn", "session", ru.out.Session, "err", err)
	}
}

// stopped handles an error writing the stream or the facts. Losing a race
// means another invocation or an operator owns the turn now: stop quietly.
// A store fault that outlasted the SDK's retries (a throttle, a 5xx, a
// timeout) suspends the turn as throttled, if the facts can still be
// written. Anything else is returned; the reaper will find the turn.
func (ru *run) stopped(ctx context.Context, err error) (Outcome, error) {
	if awsenv.Transient(err) && ctx.Err() == nil {
		out, serr := ru.shelve(ctx)
		if serr == nil {
			ru.r.log().WarnContext(ctx, "store fault: turn suspended", "session", ru.out.Session, "turn", ru.out.Turn, "err", err)
			return out, nil
		}
		if !session.LostRace(serr) {
			return ru.out, fmt.Errorf("turn %s of %s: %w (and suspending it: %w)", ru.out.Turn, ru.out.Session, err, serr)
		}
		err = serr
	}
	if errors.Is(err, streams.ErrChunkTaken) || errors.Is(err, streams.ErrPoisoned) || session.LostRace(err) {
		ru.r.log().InfoContext(ctx, "turn superseded", "session", ru.out.Session, "turn", ru.out.Turn, "err", err)
		ru.out.Kind = Superseded
		ru.recordUnwritten(ctx)
		if !errors.Is(err, streams.ErrChunkTaken) && !errors.Is(err, streams.ErrPoisoned) {
			ru.closeIfEnded(ctx)
		}
		return ru.out, nil
	}
	return ru.out, fmt.Errorf("turn %s of %s: %w", ru.out.Turn, ru.out.Session, err)
}

// recordUnwritten records, when the turn was ended under this invocation (a
// cancel), the usage of the billed steps it completed that the ending did
// not count: those the canceller could not read, since the stream was
// closed before this invocation wrote them (its chunk is then refused). A
// turn taken over by another invocation is left to it. Best effort: a
// failure is logged.
func (ru *run) recordUnwritten(ctx context.Context) {
	ru.replay()
	mine := ru.turn.Usage()
	if mine.Steps == 0 || ctx.Err() != nil {
		return
	}
	id := ru.out.Session
	fs, err := ru.r.Sessions.Facts(ctx, id, ru.sess.State.LastSeq)
	if err != nil {
		ru.r.log().WarnContext(ctx, "read the facts of an ended turn", "session", id, "err", err)
		return
	}
	var ended *reducer.Fact
	for i := range fs {
		if fs[i].Ends() && fs[i].Turn == ru.out.Turn {
			ended = &fs[i]
		}
	}
	if ended == nil || ended.Usage == nil {
		return
	}
	lost := mine.Sub(*ended.Usage)
	if lost.Steps <= 0 || lost.InputTokens < 0 || lost.OutputTokens < 0 || lost.CostMicroUSD < 0 {
		return
	}
	f := reducer.Fact{Type: reducer.UsageRecorded, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Usage: &lost}
	err = retry.Do(ctx, commitPolicy, func() error {
		sess, err := ru.r.Sessions.Load(ctx, id)
		if err != nil {
			return err
		}
		_, err = ru.r.Sessions.Append(ctx, id, sess.State, f)
		return err
	}, func(err error) bool { return errors.Is(err, session.ErrConflict) })
	if err != nil {
		ru.r.log().WarnContext(ctx, "record the usage of steps the ended turn's stream lacks", "session", id, "turn", ru.out.Turn, "err", err)
		return
	}
	ru.r.log().InfoContext(ctx, "recorded the usage of steps the ended turn's stream lacks", "session", id, "turn", ru.out.Turn, "steps", lost.Steps)
}

// shelve suspends the turn as throttled after a store write failed, without
// writing the stream, which may be what failed: parts not yet durable are
// dropped, and a step they belonged to is redone on resume.
func (ru *run) shelve(ctx context.Context) (Outcome, error) {
	if err := ru.append(ctx, reducer.Fact{Type: reducer.TurnSuspended, Actor: agentActor(ru.out.Turn),
		Turn: ru.out.Turn, Cause: reducer.CauseThrottled}); err != nil {
		return ru.out, err
	}
	ru.out.Kind, ru.out.Cause = Suspended, reducer.CauseThrottled
	wake.Notify(ctx, ru.r.Waker, ru.r.log(), wake.Wake{Session: ru.out.Session, Reason: wake.Throttled, Seq: ru.sess.State.LastSeq},
		ru.lim.ModelRetry.WakeDelay)
	return ru.out, nil
}
