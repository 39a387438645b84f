package model

import (
	"errors"
	"testing"
	"time"
)

func TestWaitGrowsAndCaps(t *testing.T) {
	p := RetryPolicy{Backoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond}
	// Try n waits within [d/2, d) for d = min(MaxBackoff, Backoff·2^(n-1)).
	caps := []time.Duration{100, 200, 400, 400, 400}
	for i, c := range caps {
		c *= time.Millisecond
		for range 50 {
			if got := p.Wait(i+1, 0); got < c/2 || got >= c {
				t.Fatalf("Wait(%d) = %v outside [%v, %v)", i+1, got, c/2, c)
			}
		}
	}
	// A longer retry-after hint wins.
	if got := p.Wait(1, 2*time.Second); got != 2*time.Second {
		t.Fatalf("Wait with a 2s hint = %v", got)
	}
}

func TestWakeAfterDoublesToItsCap(t *testing.T) {
	p := RetryPolicy{WakeDelay: 30 * time.Second, MaxWakeDelay: 5 * time.Minute}
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := p.WakeAfter(i+1, 0); got != w {
			t.Fatalf("WakeAfter(%d) = %v, want %v", i+1, got, w)
		}
	}
	// A retry-after hint longer than the delay wins, up to the cap.
	if got := p.WakeAfter(1, 90*time.Second); got != 90*time.Second {
		t.Fatalf("WakeAfter with a 90s hint = %v", got)
	}
	if got := p.WakeAfter(1, time.Hour); got != 5*time.Minute {
		t.Fatalf("WakeAfter with an hour's hint = %v, want the 5m cap", got)
	}
	// Deterministic: no jitter.
	if a, b := p.WakeAfter(3, 0), p.WakeAfter(3, 0); a != b {
		t.Fatalf("WakeAfter(3) gave %v then %v", a, b)
	}
}

func TestRetryPolicyDefaults(t *testing.T) {
	got := RetryPolicy{}.WithDefaults()
	want := DefaultRetryPolicy()
	if got.Attempts != want.Attempts || got.Backoff != want.Backoff || got.MaxBackoff != want.MaxBackoff ||
		got.WakeDelay != want.WakeDelay || got.MaxWakeDelay != want.MaxWakeDelay || got.Suspensions != want.Suspensions {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
	if want.Attempts != 4 || want.Backoff != 500*time.Millisecond || want.MaxBackoff != 30*time.Second ||
		want.WakeDelay != 30*time.Second || want.MaxWakeDelay != 15*time.Minute || want.Suspensions != 20 {
		t.Fatalf("DefaultRetryPolicy() = %+v: update the docs if this changes", want)
	}
	// A cap below its base is raised to the base.
	p := RetryPolicy{Backoff: time.Minute, MaxBackoff: time.Second, WakeDelay: time.Hour, MaxWakeDelay: time.Minute}.WithDefaults()
	if p.MaxBackoff != time.Minute || p.MaxWakeDelay != time.Hour {
		t.Fatalf("caps = %v, %v", p.MaxBackoff, p.MaxWakeDelay)
	}
}

func TestRetryableAndTransientKinds(t *testing.T) {
	cases := []struct {
		kind                 ErrorKind
		retryable, transient bool
	}{
		{Throttled, true, true},
		{Overloaded, true, true},
		{Unavailable, true, true},
		{Interrupted, true, true},
		{BadOutput, true, false},
		{ContextTooLong, false, false},
		{Auth, false, false},
		{InvalidRequest, false, false},
		{Other, false, false},
	}
	for _, c := range cases {
		e := &Error{Kind: c.kind, Err: errors.New("x")}
		if e.Retryable() != c.retryable || e.Transient() != c.transient {
			t.Errorf("%s: retryable %v transient %v, want %v %v", c.kind, e.Retryable(), e.Transient(), c.retryable, c.transient)
		}
	}
}
