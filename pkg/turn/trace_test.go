package turn_test

import (
	"context"
	"sync"
	"testing"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/traceparent"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// runs records the runs a Run interceptor saw.
type runs struct {
	mu   sync.Mutex
	seen []intercept.Run
	ends []intercept.RunEnd
}

func (r *runs) interceptor() intercept.Interceptor {
	return intercept.Interceptor{Run: func(next intercept.RunFunc) intercept.RunFunc {
		return func(ctx context.Context, run intercept.Run) (intercept.RunEnd, error) {
			end, err := next(ctx, run)
			r.mu.Lock()
			r.seen, r.ends = append(r.seen, run), append(r.ends, end)
			r.mu.Unlock()
			return end, err
		}
	}}
}

func startedTrace(t *testing.T, inv *invocation, id string) string {
	t.Helper()
	for _, f := range facts(t, inv, id) {
		if f.Type == reducer.TurnStarted {
			return f.Trace
		}
	}
	t.Fatal("no turn.started fact")
	return ""
}

// TestTraceAcrossInvocations: a turn that no traced request started
// records a fresh trace context in its turn.started fact, and every
// invocation of it (a start, then resumes after budget suspensions) runs
// under that one trace, each a Run the interceptor sees with its number.
func TestTraceAcrossInvocations(t *testing.T) {
	t.Parallel()
	inv := fresh(t, demoAgent(t, script(t, stepsScript(3)), turn.Limits{MaxStepsPerInvocation: 1}))
	var seen runs
	inv.intercept([]intercept.Interceptor{seen.interceptor()})
	id := newSession(t, inv, "go")
	ctx := context.Background()
	out, err := inv.runner.Start(ctx, id)
	for err == nil && out.Kind == turn.Suspended {
		out, err = inv.runner.Resume(ctx, id)
	}
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn: %+v %v", out, err)
	}
	trace := startedTrace(t, inv, id)
	if !traceparent.Valid(trace) {
		t.Fatalf("turn.started trace %q is not a traceparent", trace)
	}
	if len(seen.seen) != 3 {
		t.Fatalf("runs seen %d, want 3", len(seen.seen))
	}
	for i, r := range seen.seen {
		if r.Trace != trace || r.Invocation != i+1 || r.Resume != (i > 0) || r.Turn != out.Turn || r.Agent != "demo" {
			t.Errorf("run %d: %+v, want invocation %d of turn %s under %s", i, r, i+1, out.Turn, trace)
		}
	}
	if e := seen.ends[2]; e.Kind != string(turn.Completed) || e.Steps != 1 {
		t.Errorf("last run ended %+v, want completed after 1 step", e)
	}
	if e := seen.ends[0]; e.Kind != string(turn.Suspended) || e.Cause != string(reducer.CauseBudget) {
		t.Errorf("first run ended %+v, want suspended for its budget", e)
	}
}

// TestTraceFromRequestOrWake: a message posted under a traced request
// starts its turn in that trace; a turn whose message has none takes the
// wake's (the context's) trace.
func TestTraceFromRequestOrWake(t *testing.T) {
	t.Parallel()
	const request = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const wake = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	inv := fresh(t, demoAgent(t, script(t, stepsScript(1)), turn.Limits{}))
	ctx := context.Background()
	id := ids.New("s")
	if _, err := inv.sessions.Create(ctx, id, "owner", "demo"); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.sessions.Post(traceparent.With(ctx, request), id, reducer.Actor{Kind: reducer.ActorOperator, ID: "owner"}, "hi"); err != nil {
		t.Fatal(err)
	}
	if out, err := inv.runner.Start(traceparent.With(ctx, wake), id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("Start: %+v %v", out, err)
	}
	if got := startedTrace(t, inv, id); got != request {
		t.Errorf("turn of a traced message: trace %q, want the request's %q", got, request)
	}

	id = newSession(t, inv, "untraced")
	if out, err := inv.runner.Start(traceparent.With(ctx, wake), id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("Start: %+v %v", out, err)
	}
	if got := startedTrace(t, inv, id); got != wake {
		t.Errorf("turn of an untraced message: trace %q, want the wake's %q", got, wake)
	}
}
