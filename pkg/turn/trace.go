package turn

import (
	"context"

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
