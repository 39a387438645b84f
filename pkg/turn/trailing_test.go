package turn_test

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// pausing is a model whose one step gives reasoning and text at once,
// then pauses until released before it finishes.
type pausing struct{ release chan struct{} }

func (m pausing) Stream(ctx context.Context, _ model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if !yield(model.Event{Type: model.ReasoningDelta, Text: "thinking"}, nil) ||
			!yield(model.Event{Type: model.TextDelta, Text: "held back?"}, nil) {
			return
		}
		select {
		case <-m.release:
		case <-ctx.Done():
			yield(model.Event{}, ctx.Err())
			return
		}
		yield(model.Event{Type: model.Finish, Stop: model.StopEnd, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil)
	}
}

// TestLiveFlushHasATrailingEdge: with LiveFlush, text the model produced
// just after a flush reaches the stream while the model pauses, before its
// next event is released, not with that event.
func TestLiveFlushHasATrailingEdge(t *testing.T) {
	t.Parallel()
	m := pausing{release: make(chan struct{})}
	lim := turn.Limits{Budget: time.Minute, Margin: time.Second, LiveFlush: 50 * time.Millisecond}
	inv := fresh(t, demoAgent(t, m, lim))
	id := newSession(t, inv, "Pause.")
	ctx := ctxT(t)
	done := make(chan error, 1)
	go func() {
		_, err := inv.runner.Start(ctx, id)
		done <- err
	}()
	released := false
	defer func() {
		if !released {
			close(m.release)
		}
		<-done
	}()
	var stream string
	// Not a timed assertion: the bound only stops a test that would
	// otherwise wait forever on the old code, which wrote the text with
	// the model's next event.
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the text never reached the stream while the model paused")
		}
		if stream == "" {
			sess, err := inv.sessions.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if sess.State.Turn == nil {
				continue
			}
			stream = sess.State.Turn.Stream
		}
		ps, _ := readParts(t, inv, id, stream)
		if text(ps) == "held back?" {
			break
		}
	}
	close(m.release)
	released = true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil
	ps, st := readParts(t, inv, id, stream)
	if st != streams.Completed || text(ps) != "held back?" {
		t.Fatalf("stream %s: text %q", st, text(ps))
	}
}

func text(ps []parts.Part) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Type == parts.TextDelta {
			b.WriteString(p.Delta)
		}
	}
	return b.String()
}

// TestLiveFlushWritesPerStep measures the stream's PutObjects per step of
// a turn whose steps give half their text, pause, then the rest: one per
// step without LiveFlush; with it, the leading and the trailing edge of
// each burst of text, never more than one per LiveFlush of the turn's
// time plus one per step.
func TestLiveFlushWritesPerStep(t *testing.T) {
	t.Parallel()
	onEmulator(t) // counts requests, injects faults or reads the queue
	const js = `{"steps":[
 {"delay":"300ms","text":"one two three four","toolCalls":[{"name":"get_weather","input":{"city":"Nice"}}]},
 {"delay":"300ms","text":"the answer is sunny"}
]}`
	puts := map[time.Duration]int64{}
	for _, every := range []time.Duration{0, 50 * time.Millisecond} {
		inv := fresh(t, demoAgent(t, script(t, js), turn.Limits{Budget: time.Minute, Margin: time.Second, LiveFlush: every}))
		id := newSession(t, inv, "Weather?")
		inv.counter.Reset()
		start := time.Now()
		out, err := inv.runner.Start(ctxT(t), id)
		took := time.Since(start)
		if err != nil || out.Kind != turn.Completed || out.Usage.Steps != 2 {
			t.Fatalf("LiveFlush %s: %+v %v", every, out, err)
		}
		puts[every] = inv.counter.Counts()["s3:PutObject"]
		t.Logf("LiveFlush %s: %d stream PutObjects for 2 steps in %s", every, puts[every], took.Round(time.Millisecond))
		if every > 0 {
			if bound := int64(took/every) + 2*2 + 1; puts[every] > bound {
				t.Errorf("LiveFlush %s: %d PutObjects, more than the bound %d", every, puts[every], bound)
			}
		}
	}
	if puts[50*time.Millisecond] <= puts[0] {
		t.Errorf("live flushing wrote no more than step-end flushing: %v", puts)
	}
}
