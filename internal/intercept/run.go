package intercept

import "context"

// Run is one invocation's run of a turn: the start of a new turn, or a
// resume of one (after a suspension, or a takeover of a dead invocation's
// turn). Its model steps, model calls and tool calls happen inside it.
type Run struct {
	Session, Turn, Agent string
	// Resume is set for a resume, clear for a start.
	Resume bool
	// Invocation counts the turn's invocations, this one included, from 1.
	Invocation int
	// Trace is the turn's W3C trace context (a traceparent), as its
	// turn.started fact recorded it: every invocation of the turn runs
	// under the same one, so a tracer puts them in one trace.
	Trace string
	// Root is set when baton minted Trace for this turn in this run (no
	// traced request posted it): nothing else will record the span Trace
	// names, so a tracer should make this run's span the trace's root,
	// with Trace's span id, and the turn's later runs its children.
	Root bool
}

// RunEnd is how a run ended: the kind of its outcome (turn.Kind:
// "completed", "suspended", "failed", "superseded", "interrupted"), the
// suspension's cause, and the model steps the run made.
type RunEnd struct {
	Kind, Cause string
	Steps       int
}

// RunFunc runs a turn's invocation and says how it ended.
type RunFunc func(ctx context.Context, r Run) (RunEnd, error)

// Runs returns base wrapped by every interceptor's Run, the first
// outermost; nil when none wraps runs.
func Runs(ics []Interceptor, base RunFunc) RunFunc {
	return wrap(ics, base, func(ic Interceptor) func(RunFunc) RunFunc { return ic.Run })
}
