package model

import (
	"context"
	"errors"
	"iter"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how WithRetry retries a step. Zero fields take defaults.
type RetryPolicy struct {
	// Base is the first backoff (default 500ms); each retry doubles it.
	Base time.Duration
	// Max caps a single backoff (default 30s). A provider retry-after hint
	// longer than Max ends the retries at once: waiting that long is the
	// runner's job (it suspends the turn), not a sleeping process's.
	Max time.Duration
	// Attempts is the total number of tries, the first included (default 4).
	Attempts int

	// Sleep waits for d or until ctx ends; nil uses a timer. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now reads the clock, to keep backoffs inside ctx's deadline; nil uses
	// time.Now.
	Now func() time.Time
	// Jitter returns a random duration in [0, d); nil uses math/rand/v2.
	Jitter func(d time.Duration) time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.Max < p.Base {
		p.Max = p.Base
	}
	if p.Attempts <= 0 {
		p.Attempts = 4
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.Jitter == nil {
		p.Jitter = func(d time.Duration) time.Duration {
			if d <= 0 {
				return 0
			}
			return rand.N(d)
		}
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff is the wait before retry n (n = 1 for the first retry): half of
// min(Max, Base·2^(n-1)) plus a jitter of up to the other half, or the
// provider's retry-after hint when that is longer.
func (p RetryPolicy) Backoff(n int, retryAfter time.Duration) time.Duration {
	p = p.withDefaults()
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	wait := d/2 + p.Jitter(d-d/2)
	return max(wait, retryAfter)
}

// WithRetry wraps m so that a step failing with a retryable *Error
// (Throttled, Overloaded) before it yielded any event is tried again after
// an exponential backoff with jitter. A step that already yielded events is
// never retried: its events are out. When the attempts run out, when the
// next backoff would pass ctx's deadline or Max, or when ctx ends while
// waiting, the sequence ends with the last *Error, so the runner can
// suspend the turn as throttled and use its RetryAfter.
func WithRetry(m Model, p RetryPolicy) Model {
	return &retrying{m: m, p: p.withDefaults()}
}

type retrying struct {
	m Model
	p RetryPolicy
}

func (r *retrying) Stream(ctx context.Context, req Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for attempt := 1; ; attempt++ {
			var (
				yielded bool
				failure error
			)
			for ev, err := range r.m.Stream(ctx, req) {
				if err != nil {
					failure = err
					break
				}
				yielded = true
				if !yield(ev, nil) {
					return
				}
			}
			if failure == nil {
				return
			}
			var me *Error
			if yielded || !errors.As(failure, &me) || !me.Retryable() || attempt >= r.p.Attempts {
				yield(Event{}, failure)
				return
			}
			wait := r.p.Backoff(attempt, me.RetryAfter)
			if wait > r.p.Max {
				yield(Event{}, failure)
				return
			}
			if dl, ok := ctx.Deadline(); ok && r.p.Now().Add(wait).After(dl) {
				yield(Event{}, failure)
				return
			}
			if err := r.p.Sleep(ctx, wait); err != nil {
				yield(Event{}, failure)
				return
			}
		}
	}
}
