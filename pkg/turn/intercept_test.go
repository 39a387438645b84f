package turn_test

import (
	"context"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// intercept runs inv's runner through ics: its model, tool and step calls,
// and its store calls (the runner's session store decorated).
func (inv *invocation) intercept(ics []intercept.Interceptor) {
	inv.runner.Interceptors = ics
	inv.runner.Sessions = intercept.Store(inv.sessions, ics)
}

// noop is an interceptor that wraps every kind of call and does nothing.
func noop() intercept.Interceptor {
	return intercept.Interceptor{
		Model: func(next intercept.ModelFunc) intercept.ModelFunc {
			return func(ctx context.Context, c intercept.ModelCall) iter.Seq2[model.Event, error] { return next(ctx, c) }
		},
		Tool: func(next intercept.ToolFunc) intercept.ToolFunc {
			return func(ctx context.Context, c intercept.ToolCall) ([]byte, error) { return next(ctx, c) }
		},
		Step: func(next intercept.StepFunc) intercept.StepFunc {
			return func(ctx context.Context, s intercept.Step) ([]parts.Part, error) { return next(ctx, s) }
		},
		Facts:   func(next session.FactLog) session.FactLog { return struct{ session.FactLog }{next} },
		Streams: func(next session.StreamStore) session.StreamStore { return struct{ session.StreamStore }{next} },
	}
}

// tally counts what an interceptor saw.
type tally struct {
	models, tools, steps atomic.Int64
	appended             atomic.Int64 // facts passed to the fact log's appends
	loads, opens         atomic.Int64 // Tail calls; stream opens
	chunks               atomic.Int64 // chunk writes that landed
	modelsInSteps        atomic.Int64 // model calls made inside a step
	inStep               atomic.Bool
}

type countedFacts struct {
	session.FactLog
	t *tally
}

func (c countedFacts) Tail(ctx context.Context, id string) ([]reducer.Fact, error) {
	c.t.loads.Add(1)
	return c.FactLog.Tail(ctx, id)
}

func (c countedFacts) Append(ctx context.Context, id string, next reducer.State, facts ...reducer.Fact) error {
	err := c.FactLog.Append(ctx, id, next, facts...)
	if err == nil {
		c.t.appended.Add(int64(len(facts)))
	}
	return err
}

func (c countedFacts) AppendWithReceipt(ctx context.Context, id string, next reducer.State, rc *dynamo.Receipt, facts ...reducer.Fact) error {
	err := c.FactLog.AppendWithReceipt(ctx, id, next, rc, facts...)
	if err == nil {
		c.t.appended.Add(int64(len(facts)))
	}
	return err
}

type countedStreams struct {
	session.StreamStore
	t *tally
}

func (c countedStreams) Open(id, stream string) *streams.Sink {
	c.t.opens.Add(1)
	return c.StreamStore.Open(id, stream)
}

func (c countedStreams) WriteChunk(ctx context.Context, ch streams.Chunk) (*streams.Stored, error) {
	found, err := c.StreamStore.WriteChunk(ctx, ch)
	if err == nil && found == nil {
		c.t.chunks.Add(1)
	}
	return found, err
}

func (t *tally) interceptor() intercept.Interceptor {
	return intercept.Interceptor{
		Model: func(next intercept.ModelFunc) intercept.ModelFunc {
			return func(ctx context.Context, c intercept.ModelCall) iter.Seq2[model.Event, error] {
				t.models.Add(1)
				if t.inStep.Load() {
					t.modelsInSteps.Add(1)
				}
				return next(ctx, c)
			}
		},
		Tool: func(next intercept.ToolFunc) intercept.ToolFunc {
			return func(ctx context.Context, c intercept.ToolCall) ([]byte, error) {
				t.tools.Add(1)
				return next(ctx, c)
			}
		},
		Step: func(next intercept.StepFunc) intercept.StepFunc {
			return func(ctx context.Context, s intercept.Step) ([]parts.Part, error) {
				t.steps.Add(1)
				t.inStep.Store(true)
				defer t.inStep.Store(false)
				return next(ctx, s)
			}
		},
		Facts:   func(next session.FactLog) session.FactLog { return countedFacts{next, t} },
		Streams: func(next session.StreamStore) session.StreamStore { return countedStreams{next, t} },
	}
}

// TestInterceptorSeesEveryCall: an interceptor on the runner sees each
// model call, tool call and step of a turn, inside one another as they
// nest, and each store call: every fact the turn wrote went through its
// fact log, and the turn's stream was opened through its stream store,
// and each of the stream's chunks written through it.
func TestInterceptorSeesEveryCall(t *testing.T) {
	t.Parallel()
	inv := fresh(t, demoAgent(t, script(t, stepsScript(3)), turn.Limits{}))
	id := newSession(t, inv, "go")
	before := len(facts(t, inv, id))
	var seen tally
	inv.intercept([]intercept.Interceptor{noop(), seen.interceptor(), noop()})
	out, err := inv.runner.Start(context.Background(), id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("Start: %+v %v", out, err)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	starts, outputs := 0, 0
	for _, p := range ps {
		switch p.Type {
		case parts.StartStep:
			starts++
		case parts.ToolOutputAvailable:
			outputs++
		}
	}
	if starts != 3 || out.Steps != 3 {
		t.Fatalf("the turn ran %d steps (%d start-step parts), want 3", out.Steps, starts)
	}
	if got := seen.steps.Load(); got != int64(starts) {
		t.Errorf("steps seen %d, want %d", got, starts)
	}
	if got, in := seen.models.Load(), seen.modelsInSteps.Load(); got != int64(starts) || in != got {
		t.Errorf("model calls seen %d (%d inside a step), want %d, all inside steps", got, in, starts)
	}
	if got := seen.tools.Load(); outputs != 2 || got != int64(outputs) {
		t.Errorf("tool calls seen %d, tool outputs in the stream %d, want 2 and 2", got, outputs)
	}
	written := len(facts(t, inv, id)) - before
	if got := seen.appended.Load(); written == 0 || got != int64(written) {
		t.Errorf("facts appended through the interceptor %d, facts the turn wrote %d", got, written)
	}
	if seen.loads.Load() != 1 || seen.opens.Load() != 1 {
		t.Errorf("loads %d, stream opens %d, want 1 and 1", seen.loads.Load(), seen.opens.Load())
	}
	infos, err := inv.sessions.Streams(context.Background(), id)
	if err != nil || len(infos) != 1 || infos[0].ID != out.Turn {
		t.Fatalf("streams of the session: %+v %v", infos, err)
	}
	if got := seen.chunks.Load(); infos[0].Chunks < 2 || got != int64(infos[0].Chunks) {
		t.Errorf("chunk writes seen %d, chunks in the stream %d (want at least 2, all seen)", got, infos[0].Chunks)
	}
}
