package model

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"
)

// attemptModel plays one scripted outcome per call: its events, then err.
type attemptModel struct {
	outcomes []outcome
	calls    int
}

type outcome struct {
	events []Event
	err    error
}

func (m *attemptModel) Stream(ctx context.Context, req Request) iter.Seq2[Event, error] {
	o := m.outcomes[min(m.calls, len(m.outcomes)-1)]
	m.calls++
	return func(yield func(Event, error) bool) {
		for _, e := range o.events {
			if !yield(e, nil) {
				return
			}
		}
		if o.err != nil {
			yield(Event{}, o.err)
		}
	}
}

var finished = []Event{
	{Type: TextDelta, Text: "hi"},
	{Type: Finish, Stop: StopEnd, Usage: Usage{InputTokens: 3, OutputTokens: 1}},
}

type sleepRecorder struct {
	waits []time.Duration
	err   error
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.waits = append(s.waits, d)
	return s.err
}

func halfJitter(d time.Duration) time.Duration { return d / 2 }

func drain(t *testing.T, seq iter.Seq2[Event, error]) ([]Event, error) {
	t.Helper()
	var evs []Event
	for ev, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func TestWithRetryRecoversFromThrottling(t *testing.T) {
	inner := &attemptModel{outcomes: []outcome{
		{err: &Error{Kind: Throttled, Status: 429, Err: errors.New("slow down")}},
		{err: &Error{Kind: Overloaded, Status: 529, Err: errors.New("overloaded")}},
		{events: finished},
	}}
	var s sleepRecorder
	m := WithRetry(inner, RetryPolicy{Base: 100 * time.Millisecond, Max: time.Second, Attempts: 4, Sleep: s.sleep, Jitter: halfJitter})
	evs, err := drain(t, m.Stream(context.Background(), Request{}))
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	if len(evs) != 2 || evs[1].Type != Finish {
		t.Fatalf("events = %+v", evs)
	}
	if inner.calls != 3 {
		t.Fatalf("calls = %d, want 3", inner.calls)
	}
	// retry 1: 50ms + 25ms jitter; retry 2: 100ms + 50ms jitter.
	want := []time.Duration{75 * time.Millisecond, 150 * time.Millisecond}
	if len(s.waits) != 2 || s.waits[0] != want[0] || s.waits[1] != want[1] {
		t.Fatalf("waits = %v, want %v", s.waits, want)
	}
}

func TestWithRetryGivesUpWithLastError(t *testing.T) {
	last := &Error{Kind: Overloaded, Status: 503, Err: errors.New("unavailable")}
	inner := &attemptModel{outcomes: []outcome{
		{err: &Error{Kind: Throttled, Status: 429, Err: errors.New("slow down")}},
		{err: last},
	}}
	var s sleepRecorder
	m := WithRetry(inner, RetryPolicy{Base: 10 * time.Millisecond, Max: time.Second, Attempts: 3, Sleep: s.sleep, Jitter: halfJitter})
	_, err := drain(t, m.Stream(context.Background(), Request{}))
	var me *Error
	if !errors.As(err, &me) || me != last {
		t.Fatalf("err = %v, want the last error", err)
	}
	if !me.Retryable() {
		t.Fatal("final error should stay retryable so the runner can suspend")
	}
	if inner.calls != 3 || len(s.waits) != 2 {
		t.Fatalf("calls = %d waits = %v", inner.calls, s.waits)
	}
}

func TestWithRetryDoesNotRetryAfterEvents(t *testing.T) {
	inner := &attemptModel{outcomes: []outcome{
		{events: []Event{{Type: TextDelta, Text: "par"}}, err: &Error{Kind: Overloaded, Err: errors.New("mid-stream")}},
		{events: finished},
	}}
	var s sleepRecorder
	m := WithRetry(inner, RetryPolicy{Attempts: 5, Sleep: s.sleep})
	evs, err := drain(t, m.Stream(context.Background(), Request{}))
	if KindOf(err) != Overloaded || len(evs) != 1 || evs[0].Text != "par" {
		t.Fatalf("evs = %+v err = %v", evs, err)
	}
	if inner.calls != 1 || len(s.waits) != 0 {
		t.Fatalf("calls = %d waits = %v", inner.calls, s.waits)
	}
}

func TestWithRetryDoesNotRetryOtherKinds(t *testing.T) {
	for _, err := range []error{
		&Error{Kind: InvalidRequest, Status: 400, Err: errors.New("bad")},
		&Error{Kind: ContextTooLong, Status: 400, Err: errors.New("too long")},
		&Error{Kind: Auth, Status: 401, Err: errors.New("key")},
		errors.New("unclassified"),
	} {
		inner := &attemptModel{outcomes: []outcome{{err: err}, {events: finished}}}
		var s sleepRecorder
		m := WithRetry(inner, RetryPolicy{Attempts: 5, Sleep: s.sleep})
		_, got := drain(t, m.Stream(context.Background(), Request{}))
		if got != err || inner.calls != 1 || len(s.waits) != 0 {
			t.Fatalf("%v: got %v after %d calls", err, got, inner.calls)
		}
	}
}

func TestWithRetryHonoursRetryAfter(t *testing.T) {
	inner := &attemptModel{outcomes: []outcome{
		{err: &Error{Kind: Throttled, Status: 429, RetryAfter: 2 * time.Second, Err: errors.New("slow")}},
		{events: finished},
	}}
	var s sleepRecorder
	m := WithRetry(inner, RetryPolicy{Base: 10 * time.Millisecond, Max: 5 * time.Second, Attempts: 3, Sleep: s.sleep, Jitter: halfJitter})
	if _, err := drain(t, m.Stream(context.Background(), Request{})); err != nil {
		t.Fatal(err)
	}
	if len(s.waits) != 1 || s.waits[0] != 2*time.Second {
		t.Fatalf("waits = %v, want [2s]", s.waits)
	}
}

func TestWithRetryRetryAfterBeyondMaxEndsAtOnce(t *testing.T) {
	throttled := &Error{Kind: Throttled, Status: 429, RetryAfter: time.Minute, Err: errors.New("slow")}
	inner := &attemptModel{outcomes: []outcome{{err: throttled}, {events: finished}}}
	var s sleepRecorder
	m := WithRetry(inner, RetryPolicy{Base: 10 * time.Millisecond, Max: 5 * time.Second, Attempts: 3, Sleep: s.sleep})
	_, err := drain(t, m.Stream(context.Background(), Request{}))
	if err != throttled || inner.calls != 1 || len(s.waits) != 0 {
		t.Fatalf("err = %v calls = %d waits = %v", err, inner.calls, s.waits)
	}
}

func TestWithRetryNeverSleepsPastDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	dl, _ := ctx.Deadline()
	fakeNow := dl.Add(-250 * time.Millisecond) // the fake clock says 250ms are left

	overloaded := &Error{Kind: Overloaded, Status: 529, Err: errors.New("overloaded")}
	inner := &attemptModel{outcomes: []outcome{{err: overloaded}, {err: overloaded}, {events: finished}}}
	var s sleepRecorder
	m := WithRetry(inner, RetryPolicy{
		Base: 200 * time.Millisecond, Max: 10 * time.Second, Attempts: 5,
		Sleep: s.sleep, Jitter: halfJitter, Now: func() time.Time { return fakeNow },
	})
	_, err := drain(t, m.Stream(ctx, Request{}))
	// retry 1 waits 150ms (fits in 250ms); retry 2 would wait 300ms (does not).
	if err != overloaded {
		t.Fatalf("err = %v, want the overloaded error", err)
	}
	if inner.calls != 2 || len(s.waits) != 1 || s.waits[0] != 150*time.Millisecond {
		t.Fatalf("calls = %d waits = %v", inner.calls, s.waits)
	}
}

func TestWithRetryCancelledWhileWaiting(t *testing.T) {
	overloaded := &Error{Kind: Overloaded, Status: 503, Err: errors.New("unavailable")}
	inner := &attemptModel{outcomes: []outcome{{err: overloaded}, {events: finished}}}
	ctx, cancel := context.WithCancel(context.Background())
	m := WithRetry(inner, RetryPolicy{Base: time.Hour, Max: 2 * time.Hour, Attempts: 3})
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := drain(t, m.Stream(ctx, Request{}))
	if err != overloaded || inner.calls != 1 {
		t.Fatalf("err = %v calls = %d", err, inner.calls)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the real sleep ignored ctx")
	}
}

func TestWithRetryStopsWhenConsumerStops(t *testing.T) {
	inner := &attemptModel{outcomes: []outcome{{events: finished}}}
	m := WithRetry(inner, RetryPolicy{})
	n := 0
	for range m.Stream(context.Background(), Request{}) {
		n++
		break
	}
	if n != 1 || inner.calls != 1 {
		t.Fatalf("n = %d calls = %d", n, inner.calls)
	}
}

func TestBackoffGrowsAndCaps(t *testing.T) {
	p := RetryPolicy{Base: 100 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: func(d time.Duration) time.Duration { return 0 }}
	want := []time.Duration{50, 100, 200, 200, 200}
	for i, w := range want {
		if got := p.Backoff(i+1, 0); got != w*time.Millisecond {
			t.Fatalf("Backoff(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	// With the default jitter every wait is within [d/2, d].
	p.Jitter = nil
	for range 100 {
		if got := p.Backoff(3, 0); got < 200*time.Millisecond || got > 400*time.Millisecond {
			t.Fatalf("Backoff(3) = %v outside [200ms, 400ms]", got)
		}
	}
}
