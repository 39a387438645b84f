package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// Step execution: asking the model for one step (stepper.step), translating
// its events into the step's stream parts (stepParts), flushing them live,
// and deciding what a failed step means (stepper.stepFailed): redone now,
// suspended, or failed.

// stepper asks the model for steps and decides what a failed one means;
// the endings stop the turn.
type stepper struct {
	*core
	end    ender
	guards *guards
}

// attempt is what the loop knows of the steps it asked for in this
// invocation: the time they took, and the failed tries of the step being
// asked for, with the last retryable error among them.
type attempt struct {
	spent time.Duration
	tries int
	fault *model.Error
}

// step asks the model for one step and returns its parts, from start-step
// to finish-step. Nothing reaches the sink unless the step completes.
func (ru *stepper) step(ctx context.Context) ([]parts.Part, error) {
	ctx, cancel := ru.until(ctx, ru.deadline.Add(-ru.lim.Margin))
	defer cancel()
	req := ru.request(ru.sess.History)
	msgs, err := ru.loadFiles(ctx, req.Messages)
	if err != nil {
		return nil, err
	}
	req.Messages = msgs
	so := ru.turn.Usage() // the turn's usage before this step
	so.Steps++
	sp := &stepParts{n: len(ru.turn.Steps), turn: ru.out.Turn, so: so, price: ru.agent.Price,
		parts: []parts.Part{{Type: parts.StartStep}}, times: ru.timing.times(time.Now())}
	if ru.lim.LiveFlush > 0 {
		sp.live = ru.sink.Live(ru.lim.LiveFlush)
		defer sp.live.Stop() // a failure it reports was reported by push or lost with the step
	}
	par := ru.guards.parallel(ctx)
	defer par.stop()
	held := false // a parallel guardrail stopped the step: nothing more of it is shown
	for ev, err := range ru.stream(ctx, ru.agent.Model, req) {
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				err = fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
			return ru.abandon(sp, fmt.Errorf("step %d: %w", sp.n, err))
		}
		sp.event(ev)
		if held = held || par.tripped(); held || ev.Type == model.Finish {
			// Held: read on to the finish, the step is billed. The finish
			// is the step's to emit once the guardrails passed it.
			continue
		}
		if err := ru.push(ctx, sp); err != nil {
			if fe := (*flushError)(nil); errors.As(err, &fe) {
				return nil, err
			}
			return ru.abandon(sp, err)
		}
	}
	if !sp.finished {
		if err := ctx.Err(); err != nil {
			return ru.abandon(sp, fmt.Errorf("step %d: %w", sp.n, err))
		}
		return ru.abandon(sp, &model.Error{Kind: model.Other, Err: fmt.Errorf("step %d: the stream ended without a finish", sp.n)})
	}
	ps, err := ru.guarded(ctx, sp, par)
	if err != nil {
		return nil, err
	}
	if sp.live != nil {
		ru.emit(ps...)
		if err := sp.live.Stop(); err != nil && ctx.Err() == nil {
			return nil, &flushError{err}
		}
		return nil, nil
	}
	return ps, nil
}

// guarded passes finished step sp through the guardrails: the parallel
// input guardrails par still running, then the output guardrails. It
// returns the parts still to emit (rewritten by a redaction), or the
// *guarded error of a step they stopped, which is discarded.
func (ru *stepper) guarded(ctx context.Context, sp *stepParts, par *parallel) ([]parts.Part, error) {
	if par != nil {
		recs, stop := par.wait()
		if stop != nil {
			return ru.guards.discard(sp, &guarded{recs: recs, stop: *stop})
		}
		if err := ru.append(ctx, decisions(ru.out.Turn, recs)...); err != nil {
			return nil, &flushError{err}
		}
	}
	ps, changed, err := ru.guards.output(ctx, sp)
	if gd := (*guarded)(nil); errors.As(err, &gd) {
		return ru.guards.discard(sp, gd)
	}
	if err != nil || changed {
		return ps, err
	}
	return sp.parts[sp.pushed:], nil
}

// stepParts translates one step's model events into its stream parts:
// text and reasoning blocks, tool calls with baton's ids, and the step's
// usage at its finish.
type stepParts struct {
	n     int           // the step's index in the turn
	turn  string        // the turn's id, for the calls' ids
	so    reducer.Usage // the turn's usage before this step, this step counted
	price *reducer.Price
	parts []parts.Part
	times conversation.StepTimes // when the model call began, and what came before it: in its metadata

	open               parts.Type // the open block's start type, if any
	blockID, signature string
	blocks, calls      int
	finished           bool

	// Live flushing (stepper.push), when the agent asks for it: how many parts
	// reached the sink, and the flusher.
	pushed int
	live   *streams.Live

	usage reducer.Usage // the step's own, at its finish
}

// event adds the parts one model event makes.
func (sp *stepParts) event(ev model.Event) {
	switch ev.Type {
	case model.ReasoningDelta:
		sp.openBlock(parts.ReasoningStart)
		sp.parts = append(sp.parts, parts.Part{Type: parts.ReasoningDelta, ID: sp.blockID, Delta: ev.Text})
	case model.ReasoningSignature:
		if sp.open == parts.ReasoningStart {
			sp.signature += ev.Text
		}
	case model.TextDelta:
		sp.openBlock(parts.TextStart)
		sp.parts = append(sp.parts, parts.Part{Type: parts.TextDelta, ID: sp.blockID, Delta: ev.Text})
	case model.ToolCall:
		sp.closeBlock()
		sp.parts = append(sp.parts, parts.Part{Type: parts.ToolInputAvailable, ToolCallID: CallID(sp.turn, sp.n, sp.calls),
			ToolName: ev.Call.Name, Input: normalizeInput(ev.Call.Input), ProviderMetadata: conversation.CallMetadata(ev.Call.ID)})
		sp.calls++
	case model.Finish:
		sp.closeBlock()
		u := reducer.Usage{InputTokens: ev.Usage.InputTokens, OutputTokens: ev.Usage.OutputTokens}
		if sp.price != nil {
			u.CostMicroUSD = sp.price.Cost(u.InputTokens, u.OutputTokens)
		}
		sp.times.Ended = time.Now()
		sp.usage = u
		sp.parts = append(sp.parts,
			parts.Part{Type: parts.MessageMetadata, MessageMetadata: conversation.TimedStepMetadata(u, sp.so.Add(u), string(ev.Stop), sp.times)},
			parts.Part{Type: parts.FinishStep})
		sp.finished = true
	}
}

// openBlock starts a block of type t unless one is open.
func (sp *stepParts) openBlock(t parts.Type) {
	if sp.open == t {
		return
	}
	sp.closeBlock()
	sp.open = t
	sp.blockID = fmt.Sprintf("s%d-b%d", sp.n, sp.blocks)
	sp.blocks++
	sp.parts = append(sp.parts, parts.Part{Type: t, ID: sp.blockID})
}

// closeBlock ends the open block, if any: a reasoning block with its
// signature.
func (sp *stepParts) closeBlock() {
	switch sp.open {
	case parts.TextStart:
		sp.parts = append(sp.parts, parts.Part{Type: parts.TextEnd, ID: sp.blockID})
	case parts.ReasoningStart:
		p := parts.Part{Type: parts.ReasoningEnd, ID: sp.blockID}
		if sp.signature != "" {
			p.ProviderMetadata = conversation.SignatureMetadata(sp.signature)
		}
		sp.parts = append(sp.parts, p)
	}
	sp.open, sp.signature = "", ""
}

// push is live flushing: parts of an unfinished step reach the stream as
// they come, at most once per LiveFlush: the first event after a quiet
// LiveFlush flushes at once (leading edge), later ones when the interval
// ends, by a timer, even while the model pauses (trailing edge). A step cut
// short then leaves a partial step in the stream, marked abandoned and
// redone.
func (ru *stepper) push(ctx context.Context, sp *stepParts) error {
	if sp.live == nil {
		return nil
	}
	ru.emit(sp.parts[sp.pushed:]...)
	sp.pushed = len(sp.parts)
	if err := sp.live.Poke(ctx); err != nil {
		if ctx.Err() != nil {
			// The step's time ran out while its parts were being
			// written: the step is cut short, the stream is not broken.
			// The parts stay buffered for the suspension's flush.
			return fmt.Errorf("step %d: a live flush ran into the step's deadline: %w", sp.n, ctx.Err())
		}
		return &flushError{err}
	}
	return nil
}

// abandon ends a step that failed with err: parts of it already pushed are
// marked abandoned.
func (ru *stepper) abandon(sp *stepParts, err error) ([]parts.Part, error) {
	if sp.pushed > 0 {
		ru.emit(parts.Part{Type: parts.DataAbandoned, Data: json.RawMessage(`{"reason":"the step was cut short and will be redone"}`)})
	}
	return nil, err
}

// stepFailed decides what a step that failed with err means: redo it at
// once, or end this invocation with the outcome returned.
func (ru *stepper) stepFailed(ctx context.Context, err error, a *attempt) (redo bool, out Outcome, ferr error) {
	var fe *flushError
	var me *model.Error
	var gd *guarded
	switch {
	case errors.As(err, &gd):
		return ru.guards.stopped(ctx, gd)
	case errors.As(err, &fe):
		out, ferr = ru.end.stopped(ctx, fe.err)
	case ctx.Err() != nil:
		// The invocation itself is ending (a process death, in tests):
		// write nothing more; the last checkpoint stands.
		return false, ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		// A runaway step hit the hard deadline: drop it and suspend.
		ru.r.log().WarnContext(ctx, "step aborted at the deadline", "session", ru.out.Session, "turn", ru.out.Turn)
		out, ferr = ru.end.outOfTime(ctx, a.fault)
	case errors.As(err, &me) && me.Retryable():
		return ru.retryStep(ctx, err, me, a)
	default:
		out, ferr = ru.end.fail(ctx, reducer.FailModel, modelFailure(err))
	}
	return false, out, ferr
}

// retryStep decides about a step that failed with the retryable me.
// Nothing of the failed try is kept: its parts were never emitted, or were
// marked abandoned. Redo it, or stop.
func (ru *stepper) retryStep(ctx context.Context, err error, me *model.Error, a *attempt) (redo bool, out Outcome, ferr error) {
	a.tries, a.fault = a.tries+1, me
	redo, werr := ru.backoff(ctx, me, a.tries, a.spent)
	switch {
	case werr != nil:
		return false, ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, werr)
	case redo:
		return true, Outcome{}, nil
	case me.Transient():
		out, ferr = ru.end.suspendFault(ctx, me)
	case a.tries < ru.lim.ModelRetry.Attempts:
		// Out of time, not out of tries: the next invocation tries again.
		out, ferr = ru.end.suspend(ctx, reducer.CauseBudget, 0)
	default:
		out, ferr = ru.end.fail(ctx, reducer.FailModel, fmt.Errorf("the model's output stayed unusable after %d tries: %w", a.tries, err))
	}
	return false, out, ferr
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

// backoff decides whether a step that failed with a retryable error for
// the tries-th time is tried again in this invocation, and waits before it
// is. It says no when the agent's tries are used up, when the provider asks
// for a longer wait than MaxBackoff, or when the wait and another step
// would not end within the step's time. Bad output is tried again at once:
// waiting does not change a model's answer. The error is ctx's, when it
// ended while waiting.
func (ru *stepper) backoff(ctx context.Context, me *model.Error, tries int, spent time.Duration) (bool, error) {
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

// stream calls model m with req, through the model interceptors.
func (ru *stepper) stream(ctx context.Context, m model.Model, req model.Request) iter.Seq2[model.Event, error] {
	if ru.hooks.model == nil {
		return m.Stream(ctx, req)
	}
	return ru.hooks.model(ctx, intercept.ModelCall{Session: ru.out.Session, Turn: ru.out.Turn, Agent: ru.agent.Name, Model: m,
		Identity: ru.identity(m), Request: req})
}

// runStep runs the next step, through the step interceptors.
func (ru *stepper) runStep(ctx context.Context) ([]parts.Part, error) {
	if ru.hooks.step == nil {
		return ru.step(ctx)
	}
	return ru.hooks.step(ctx, intercept.Step{Session: ru.out.Session, Turn: ru.out.Turn, Agent: ru.agent.Name, Index: len(ru.turn.Steps)})
}
