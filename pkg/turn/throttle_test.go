package turn_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
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
	t.Parallel()
	ctx := ctxT(t)
	m := &throttled{}
	// The provider's retry-after (3 s) is longer than MaxBackoff: waiting
	// that long is the suspended turn's job, so the step is not redone.
	agent := demoAgent(t, m, turn.Limits{ModelRetry: model.RetryPolicy{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Attempts: 3, WakeDelay: time.Second}})
	inv := fresh(t, agent)
	id := newSession(t, inv, "Hello?")
	drainWakes(t, inv)
	before := time.Now()
	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Suspended || out.Cause != reducer.CauseThrottled {
		t.Fatalf("outcome = %+v, want suspended for throttling", out)
	}
	if m.calls != 1 {
		t.Fatalf("model called %d times", m.calls)
	}
	fs := facts(t, inv, id)
	last := fs[len(fs)-1]
	if last.Type != reducer.TurnSuspended || last.Cause != reducer.CauseThrottled || last.Faults != 1 ||
		last.Wake.Before(before.Add(3*time.Second)) || last.Wake.After(time.Now().Add(3*time.Second)) {
		t.Fatalf("last fact = %+v, want the first fault suspension with its wake 3s on", last)
	}
	// The wake is delayed by the provider's retry-after: not visible yet.
	wait(t, 500*time.Millisecond)
	if n := visibleWakes(t, inv, id); n != 0 {
		t.Fatalf("%d wakes for the session visible before the retry-after", n)
	}
	wait(t, 3*time.Second)
	if n := visibleWakes(t, inv, id); n != 1 {
		t.Fatalf("%d wakes for the session visible after the retry-after, want 1", n)
	}
	if w := receiveWake(t, inv, id); w.Session != id || w.Reason != wake.Throttled {
		t.Fatalf("wake = %+v", w)
	}
}

// flaky fails its first failures steps with err, each after streaming a
// text delta, then plays the scripted model.
type flaky struct {
	model.Model
	err      error
	failures int
	calls    int
}

func (m *flaky) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	m.calls++
	if m.calls > m.failures {
		return m.Model.Stream(ctx, req)
	}
	return func(yield func(model.Event, error) bool) {
		if yield(model.Event{Type: model.TextDelta, Text: "cut-short "}, nil) {
			yield(model.Event{}, m.err)
		}
	}
}

const helloScript = `{"steps":[{"text":"Hello!"}]}`

var unavailable = &model.Error{Kind: model.Unavailable, Status: 500, Err: errors.New("internal server error")}

// A step cut short by a transient fault is dropped and redone within the
// invocation; nothing of it is kept, even when it was flushed live.
func TestTransientFaultRedoesTheStep(t *testing.T) {
	t.Parallel()
	for _, live := range []time.Duration{0, time.Millisecond} {
		t.Run("liveFlush="+live.String(), func(t *testing.T) {
			ctx := ctxT(t)
			m := &flaky{Model: script(t, helloScript), err: unavailable, failures: 2}
			inv := fresh(t, demoAgent(t, m, turn.Limits{LiveFlush: live, ModelRetry: model.RetryPolicy{Backoff: time.Millisecond}}))
			id := newSession(t, inv, "Hello?")
			out, err := inv.runner.Start(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if out.Kind != turn.Completed || out.Steps != 1 || m.calls != 3 {
				t.Fatalf("outcome %+v after %d calls, want completed in 1 step after 3 calls", out, m.calls)
			}
			ps, closed := readParts(t, inv, id, out.Turn)
			if closed != streams.Completed {
				t.Fatalf("stream %s", closed)
			}
			var text strings.Builder
			finished, abandoned := 0, 0
			for _, p := range ps {
				switch p.Type {
				case parts.FinishStep:
					finished++
				case parts.DataAbandoned:
					abandoned++
				case parts.TextDelta:
					text.WriteString(p.Delta)
				}
			}
			if finished != 1 {
				t.Fatalf("%d finished steps, want 1", finished)
			}
			sess, err := inv.sessions.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(sess.History); n != 2 || sess.History[1].Content[0].Text != "Hello!" {
				t.Fatalf("history = %+v, want the question and Hello!", sess.History)
			}
			if live == 0 && (abandoned != 0 || strings.Contains(text.String(), "cut-short")) {
				t.Fatalf("the cut steps reached the stream: %d abandoned, text %q", abandoned, text.String())
			}
			if live > 0 && abandoned != 2 {
				t.Fatalf("%d abandoned markers for 2 live-flushed cut steps", abandoned)
			}
		})
	}
}

// A fault that outlasts the step's tries suspends the turn as
// model-unavailable; each suspension in a row waits longer, and one past
// the policy's Suspensions fails the turn.
func TestPersistentFaultSuspendsWithGrowingWakesThenFails(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	m := &flaky{Model: script(t, helloScript), err: unavailable, failures: 1 << 20}
	pol := model.RetryPolicy{Attempts: 2, Backoff: time.Millisecond, WakeDelay: time.Second, MaxWakeDelay: 3 * time.Second, Suspensions: 3}
	inv := fresh(t, demoAgent(t, m, turn.Limits{ModelRetry: pol}))
	id := newSession(t, inv, "Hello?")
	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var delays []time.Duration
	for i := 1; ; i++ {
		if out.Kind != turn.Suspended {
			break
		}
		if out.Cause != reducer.CauseModelUnavailable || m.calls != 2*i {
			t.Fatalf("invocation %d: %+v after %d calls", i, out, m.calls)
		}
		fs := facts(t, inv, id)
		last := fs[len(fs)-1]
		if last.Faults != i {
			t.Fatalf("invocation %d: suspension counts %d faults", i, last.Faults)
		}
		delays = append(delays, last.Wake.Sub(last.Time).Round(time.Second))
		if _, err := inv.runner.Resume(ctx, id); !errors.Is(err, turn.ErrNotResumable) {
			t.Fatalf("Resume before the delayed wake: %v, want ErrNotResumable", err)
		}
		passWake(t, inv, id)
		if out, err = inv.runner.Resume(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; len(delays) != 3 ||
		delays[0] != want[0] || delays[1] != want[1] || delays[2] != want[2] {
		t.Fatalf("wake delays %v, want %v", delays, want)
	}
	if out.Kind != turn.Failed || out.Failure.Kind != reducer.FailModel ||
		!strings.Contains(out.Failure.Error, "through 3 suspensions") || !strings.Contains(out.Failure.Error, "internal server error") {
		t.Fatalf("outcome %+v, want failed{model} after 3 suspensions", out)
	}
}

// A completed step breaks the row: the next fault suspension counts from 1.
func TestFaultCountResetsAfterAStep(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	m := &flaky{Model: script(t, helloScript), err: unavailable, failures: 1}
	pol := model.RetryPolicy{Attempts: 1, Backoff: time.Millisecond}
	inv := fresh(t, demoAgent(t, m, turn.Limits{ModelRetry: pol}))
	id := newSession(t, inv, "Hello?")
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Cause != reducer.CauseModelUnavailable {
		t.Fatalf("Start: %+v, %v", out, err)
	}
	passWake(t, inv, id)
	if out, err = inv.runner.Resume(ctx, id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("Resume: %+v, %v", out, err)
	}
}

// An error that cannot succeed fails the turn at once, saying why.
func TestAuthFailureFailsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	m := &flaky{Model: script(t, helloScript), err: &model.Error{Kind: model.Auth, Status: 401, Err: errors.New("invalid x-api-key")}, failures: 1 << 20}
	inv := fresh(t, demoAgent(t, m, turn.Limits{}))
	id := newSession(t, inv, "Hello?")
	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Failed || out.Failure.Kind != reducer.FailModel || m.calls != 1 ||
		!strings.Contains(out.Failure.Error, "refused the credentials") || !strings.Contains(out.Failure.Error, "invalid x-api-key") {
		t.Fatalf("outcome %+v after %d calls", out, m.calls)
	}
}

// Invalid tool JSON is redone at once; when it stays invalid the turn fails.
func TestBadOutputFailsWhenItStaysBad(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	bad := &model.Error{Kind: model.BadOutput, Err: errors.New("tool call call_1: input is not valid JSON")}
	m := &flaky{Model: script(t, helloScript), err: bad, failures: 1 << 20}
	inv := fresh(t, demoAgent(t, m, turn.Limits{ModelRetry: model.RetryPolicy{Attempts: 3}}))
	id := newSession(t, inv, "Hello?")
	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Failed || out.Failure.Kind != reducer.FailModel || m.calls != 3 ||
		!strings.Contains(out.Failure.Error, "stayed unusable after 3 tries") {
		t.Fatalf("outcome %+v after %d calls", out, m.calls)
	}
	// Once: the turn completes when a retry gives valid output.
	m2 := &flaky{Model: script(t, helloScript), err: bad, failures: 1}
	inv2 := fresh(t, demoAgent(t, m2, turn.Limits{}))
	id2 := newSession(t, inv2, "Hello?")
	if out, err := inv2.runner.Start(ctx, id2); err != nil || out.Kind != turn.Completed || m2.calls != 2 {
		t.Fatalf("outcome %+v, %v after %d calls", out, err, m2.calls)
	}
}

// passWake moves the store's clock past the delayed wake of the session's
// last suspension, as when that wake arrives: a fault-suspended turn is not
// resumed before it (see reducer.State.Next).
func passWake(t *testing.T, inv *invocation, id string) {
	t.Helper()
	fs := facts(t, inv, id)
	d := fs[len(fs)-1].Wake.Sub(inv.sessions.Clock())
	if d <= 0 {
		return
	}
	prev := inv.sessions.Now
	if prev == nil {
		prev = time.Now
	}
	inv.sessions.Now = func() time.Time { return prev().Add(d) }
}
