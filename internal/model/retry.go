package model

import (
	"math/rand/v2"
	"time"
)

// RetryPolicy says how a turn rides out transient model faults (see
// Error.Retryable and Error.Transient). A failed step is dropped and tried
// again within the invocation, after a backoff, while the tries and the
// step's time last. A fault that outlasts them suspends the turn with a
// delayed wake that grows with each suspension in a row; after Suspensions
// of them the turn fails. Zero fields take defaults.
type RetryPolicy struct {
	// Attempts is how many times one step is tried within an invocation,
	// the first included (default 4).
	Attempts int
	// Backoff is the first wait between tries (default 500ms); each further
	// try doubles it.
	Backoff time.Duration
	// MaxBackoff caps one wait (default 30s). A provider's retry-after hint
	// longer than MaxBackoff ends the tries at once: waiting that long is
	// for a suspended turn, not a sleeping process.
	MaxBackoff time.Duration
	// WakeDelay is how long the first suspension for a fault waits before
	// its wake (default 30s); each further suspension in a row doubles it.
	WakeDelay time.Duration
	// MaxWakeDelay caps the wake delay (default 15m, the longest an SQS
	// wake can be delayed).
	MaxWakeDelay time.Duration
	// Suspensions is how many suspensions for faults in a row, with no
	// step completed between them, a turn may take; the one after fails
	// the turn (default 20, about four hours of outage with the other
	// defaults).
	Suspensions int
}

// DefaultRetryPolicy is the policy of an agent that sets none.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		Attempts:     4,
		Backoff:      500 * time.Millisecond,
		MaxBackoff:   30 * time.Second,
		WakeDelay:    30 * time.Second,
		MaxWakeDelay: 15 * time.Minute,
		Suspensions:  20,
	}
}

// WithDefaults fills zero fields from DefaultRetryPolicy.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.Attempts <= 0 {
		p.Attempts = d.Attempts
	}
	p.Backoff, p.MaxBackoff = bounded(p.Backoff, p.MaxBackoff, d.Backoff, d.MaxBackoff)
	p.WakeDelay, p.MaxWakeDelay = bounded(p.WakeDelay, p.MaxWakeDelay, d.WakeDelay, d.MaxWakeDelay)
	if p.Suspensions <= 0 {
		p.Suspensions = d.Suspensions
	}
	return p
}

// bounded fills a zero wait and its bound from their defaults, and keeps
// the bound at or above the wait.
func bounded(wait, bound, defWait, defBound time.Duration) (time.Duration, time.Duration) {
	if wait <= 0 {
		wait = defWait
	}
	if bound <= 0 {
		bound = max(defBound, wait)
	}
	return wait, max(bound, wait)
}

// Wait is the wait before try n+1 of a step (n = 1 after the first
// failed try): half of min(MaxBackoff, Backoff·2^(n-1)) plus a jitter of up
// to the other half, or the provider's retry-after hint when that is
// longer.
func (p RetryPolicy) Wait(n int, retryAfter time.Duration) time.Duration {
	p = p.WithDefaults()
	d := doubled(p.Backoff, p.MaxBackoff, n)
	wait := d / 2
	if j := d - d/2; j > 0 {
		wait += rand.N(j)
	}
	return max(wait, retryAfter)
}

// WakeAfter is the delay of the wake of the nth suspension for a fault in a
// row (n = 1 for the first): min(MaxWakeDelay, WakeDelay·2^(n-1)), or the
// provider's retry-after hint when that is longer, up to MaxWakeDelay. It
// has no jitter: the same durable state gives the same delay.
func (p RetryPolicy) WakeAfter(n int, retryAfter time.Duration) time.Duration {
	p = p.WithDefaults()
	d := doubled(p.WakeDelay, p.MaxWakeDelay, n)
	return min(max(d, retryAfter), p.MaxWakeDelay)
}

// doubled is base·2^(n-1), capped at limit.
func doubled(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
