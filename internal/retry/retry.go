package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Policy bounds a retry. At least one of Attempts and Budget should be
// set; a Policy with neither tries once.
type Policy struct {
	// Attempts is the most tries in all, the first included; 0 means no
	// bound on the count.
	Attempts int
	// Budget is the longest the tries may take, from the first; 0 means no
	// bound but the context's deadline, which bounds a Budget further.
	Budget time.Duration
	// Base and Max shape the backoff: before try n+1 Do waits a random time
	// between zero and min(Max, Base·2ⁿ⁻¹) (full jitter). A zero Base
	// retries at once.
	Base, Max time.Duration
}

// ErrExhausted is matched by the error Do returns when the policy's bound
// ran out; the last error is wrapped too.
var ErrExhausted = errors.New("retry: gave up")

// Cap is the most Do waits before try attempt+2, attempt counting from 0.
func (p Policy) Cap(attempt int) time.Duration {
	c := p.Base
	if c <= 0 {
		return 0
	}
	for i := 0; i < attempt && (p.Max <= 0 || c < p.Max) && c < math.MaxInt64/2; i++ {
		c *= 2
	}
	if p.Max > 0 && c > p.Max {
		c = p.Max
	}
	return c
}

// Wait is a random wait before try attempt+2: uniform in [0, Cap(attempt)].
func (p Policy) Wait(attempt int) time.Duration {
	c := p.Cap(attempt)
	if c <= 0 {
		return 0
	}
	return rand.N(c + 1)
}

// Do calls fn until it returns nil or an error retryable rejects (returned
// as is), or the policy runs out: then it returns an error matching
// ErrExhausted and fn's last error. It gives up rather than start a wait
// that would end past the budget or ctx's deadline, and returns ctx's
// error if ctx ends while it waits. A nil retryable retries every error.
func Do(ctx context.Context, p Policy, fn func() error, retryable func(error) bool) error {
	start := time.Now()
	var stop time.Time
	if p.Budget > 0 {
		stop = start.Add(p.Budget)
	}
	if dl, ok := ctx.Deadline(); ok && (stop.IsZero() || dl.Before(stop)) {
		stop = dl
	}
	attempts := p.Attempts
	if attempts <= 0 && p.Budget <= 0 {
		attempts = 1
	}
	for n := 1; ; n++ {
		err := fn()
		if err == nil || (retryable != nil && !retryable(err)) {
			return err
		}
		wait := p.Wait(n - 1)
		if (attempts > 0 && n >= attempts) || (!stop.IsZero() && time.Now().Add(wait).After(stop)) {
			return fmt.Errorf("%w after %d tries in %v: %w", ErrExhausted, n, time.Since(start).Round(time.Millisecond), err)
		}
		if wait <= 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
