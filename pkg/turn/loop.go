package turn

import (
	"context"
	"iter"
	"time"

	"github.com/baton-run/baton/internal/claims/claimsession"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/tool"
)

// run is one invocation: a thin loop (loop.go) over collaborators that
// own their part of it, each built on the shared core and on the few
// others it calls: the tool ledger (ledger.go), the step (step.go),
// steering (steer.go), compaction (compact.go), children (children.go),
// claims (claimsession.Calls, wired in claims.go), and the invocation's
// endings (loop.go).
type run struct {
	*core
	end       *ending
	ledger    *ledger
	stepper   *stepper
	steer     *steering
	compactor *compactor
	children  *children
	claims    *claimsession.Calls
	guards    *guards
}

// newRun is the invocation on c, its collaborators wired.
func newRun(c *core) *run {
	kids := newChildren(c)
	end := &ending{core: c, parent: kids}
	kids.end = end
	claims := newClaims(c)
	steer := &steering{core: c, end: end}
	gs := &guards{core: c, end: end, deliver: steer.deliver}
	stepper := &stepper{core: c, end: end, guards: gs}
	return &run{core: c, end: end, children: kids, claims: claims, stepper: stepper, guards: gs,
		ledger:    &ledger{core: c, end: end, children: kids, claims: claims, callbacks: &callbacks{core: c}},
		steer:     steer,
		compactor: &compactor{core: c, end: end, stepper: stepper},
	}
}

// loop runs steps until the turn ends or this invocation must stop. Each
// iteration settles the tool calls of the last step (the tool ledger,
// ledger.go), catches up with the messages posted meanwhile (steer.go),
// checks the turn's caps and time (checks.go), compacts the context if it
// must, steers the waiting messages in, then checkpoints and asks the model
// for the next step (step.go). The checkpoint is one chunk holding the step
// and its tool results: one durable write per step.
func (ru *run) loop(ctx context.Context) (Outcome, error) {
	var a attempt
	if stop, out, err := ru.children.orphaned(ctx); stop {
		return out, err
	}
	if err := ru.ledger.offer(ctx); err != nil {
		return ru.ledger.unoffered(ctx, err)
	}
	for {
		ru.replay()
		if stop, out, err := ru.ledger.settleLast(ctx); stop {
			return out, err
		}
		// Guardrails: escalations answered, and the input before the
		// first step (guards.go).
		if stop, again, out, err := ru.guards.settle(ctx); stop {
			return out, err
		} else if again {
			continue
		}
		// A step boundary: messages posted meanwhile may end the turn or
		// be steered into it (see steer.go).
		if err := ru.steer.catchUp(ctx); err != nil {
			return ru.end.stopped(ctx, err)
		}
		if ru.sess.State.Turn.Interrupt {
			return ru.steer.interrupt(ctx)
		}
		if stop, out, err := ru.stepper.check(ctx, &a); stop {
			return out, err
		}
		if stop, out, err := ru.compactor.compact(ctx, a.spent); stop {
			return out, err
		}
		if stop, out, err := ru.guards.steered(ctx); stop {
			return out, err
		}
		if err := ru.steer.deliver(ctx); err != nil {
			return ru.end.stopped(ctx, err)
		}
		// The checkpoint. A buffer holding only the turn's start or
		// resumption markers waits for the first step, so a step costs one
		// write.
		ru.timing.checkpointed()
		if ru.dirty {
			if err := ru.sink.Flush(ctx); err != nil {
				return ru.end.stopped(ctx, err)
			}
			ru.dirty = false
		}
		began := time.Now()
		ps, err := ru.stepper.runStep(ctx)
		a.spent += time.Since(began)
		if err != nil {
			redo, out, err := ru.stepper.stepFailed(ctx, err, &a)
			if redo {
				continue
			}
			return out, err
		}
		a.tries, a.fault = 0, nil
		ru.emit(ps...)
		ru.out.Steps++
		ru.timing.reset()
	}
}

// intercept builds the run's chains from the runner's interceptors.
func (ru *run) intercept() {
	ics := ru.r.Interceptors
	if len(ics) == 0 {
		return
	}
	ru.hooks.model = intercept.Model(ics, func(ctx context.Context, c intercept.ModelCall) iter.Seq2[model.Event, error] {
		return c.Model.Stream(ctx, c.Request)
	})
	ru.hooks.tool = intercept.Tool(ics, func(ctx context.Context, c intercept.ToolCall) ([]byte, error) {
		return tool.Invoke(ctx, c.Tool, c.Call)
	})
	ru.hooks.step = intercept.Steps(ics, func(ctx context.Context, _ intercept.Step) ([]parts.Part, error) {
		return ru.stepper.step(ctx)
	})
}

// invocation runs body, the rest of the invocation once its turn.started
// or turn.resumed fact stands, through the run interceptors.
func (ru *run) invocation(ctx context.Context, resume bool, body func(context.Context) (Outcome, error)) (Outcome, error) {
	if len(ru.r.Interceptors) == 0 {
		return body(ctx)
	}
	var out Outcome
	f := intercept.Runs(ru.r.Interceptors, func(ctx context.Context, _ intercept.Run) (intercept.RunEnd, error) {
		var err error
		out, err = body(ctx)
		return intercept.RunEnd{Kind: string(out.Kind), Cause: string(out.Cause), Steps: out.Steps}, err
	})
	if f == nil {
		return body(ctx)
	}
	invocations := 1
	if t := ru.sess.State.Turn; t != nil {
		invocations = t.Invocations
	}
	_, err := f(ctx, intercept.Run{Session: ru.out.Session, Turn: ru.out.Turn, Agent: ru.agent.Name,
		Resume: resume, Invocation: invocations, Trace: ru.trace, Root: ru.traceRoot})
	return out, err
}
