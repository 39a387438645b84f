package turn

import (
	"context"

	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/traceparent"
	"github.com/baton-run/baton/pkg/reducer"
)

// startTrace is the trace context a new turn records in its turn.started
// fact, and every invocation of the turn runs under: the first waiting
// message's that has one (a traced request posted it), else the one ctx
// carries (the wake's), else a fresh one, minted (then this run's span is
// the trace's root: see intercept.Run.Root). It is data, minted once: the
// turn's later invocations read it from the facts.
func startTrace(ctx context.Context, inbox []reducer.Message) (tp string, minted bool) {
	for _, m := range inbox {
		if m.Trace != "" {
			return m.Trace, false
		}
	}
	if tp := traceparent.From(ctx); tp != "" {
		return tp, false
	}
	return traceparent.New(), true
}

// resumeTrace is the trace of a turn whose facts recorded trace: that,
// or for a turn from before traces the wake's, else a fresh one.
func resumeTrace(ctx context.Context, recorded string) string {
	if recorded != "" {
		return recorded
	}
	tp, _ := startTrace(ctx, nil)
	return tp
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

// identity names model m for the interceptors: the agent's identity for
// its own model, else what m says of itself.
func (ru *core) identity(m model.Model) model.Identity {
	if m == ru.agent.Model && ru.agent.Identity != (model.Identity{}) {
		return ru.agent.Identity
	}
	return model.IdentityOf(m)
}
