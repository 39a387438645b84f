package turn_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/model"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// throttled is a model whose provider keeps answering 429.
type throttled struct{ calls int }

func (m *throttled) Stream(context.Context, model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		m.calls++
		yield(model.Event{}, &model.Error{Kind: model.Throttled, Status: 429, RetryAfter: 3 * time.Second, Err: errors.New("slow down")})
	}
}

func TestPersistentThrottleSuspendsForALaterWake(t *testing.T) {
	ctx := ctxT(t)
	m := &throttled{}
	// The retry wrapper gives up once its backoff would pass the step's time.
	agent := demoAgent(t, model.WithRetry(m, model.RetryPolicy{Base: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 3}), turn.Limits{})
	inv := fresh(agent)
	id := newSession(t, inv, "Hello?")
	drainWakes(t, inv)
	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Suspended || out.Cause != reducer.CauseThrottled {
		t.Fatalf("outcome = %+v, want suspended for throttling", out)
	}
	if m.calls != 1 {
		// RetryAfter (3 s) exceeds the policy's Max: waiting that long is
		// the turn's job, so the wrapper stops at once.
		t.Fatalf("model called %d times", m.calls)
	}
	fs := facts(t, inv, id)
	if last := fs[len(fs)-1]; last.Type != reducer.TurnSuspended || last.Cause != reducer.CauseThrottled {
		t.Fatalf("last fact = %+v", last)
	}
	// The wake is delayed by the provider's retry-after: not visible yet.
	time.Sleep(500 * time.Millisecond)
	if n := queued(t, inv); n != 0 {
		t.Fatalf("%d wakes visible before the retry-after", n)
	}
	time.Sleep(3 * time.Second)
	if w := receiveWake(t, inv); w.Session != id || w.Reason != string(reducer.CauseThrottled) {
		t.Fatalf("wake = %+v", w)
	}
}
