package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/retry"
)

var errLost = errors.New("lost the race")

func failing(calls *int, err error) func() error {
	return func() error { *calls++; return err }
}

func isLost(err error) bool { return errors.Is(err, errLost) }

func TestAttemptsBound(t *testing.T) {
	calls := 0
	err := retry.Do(t.Context(), retry.Policy{Attempts: 4}, failing(&calls, errLost), isLost)
	if calls != 4 || !errors.Is(err, retry.ErrExhausted) || !errors.Is(err, errLost) {
		t.Fatalf("%d calls, %v; want 4 calls and ErrExhausted wrapping the last error", calls, err)
	}
}

func TestNoBoundTriesOnce(t *testing.T) {
	calls := 0
	err := retry.Do(t.Context(), retry.Policy{}, failing(&calls, errLost), isLost)
	if calls != 1 || !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("%d calls, %v", calls, err)
	}
}

func TestSuccessAndPermanentErrorsStop(t *testing.T) {
	calls := 0
	err := retry.Do(t.Context(), retry.Policy{Attempts: 10}, func() error {
		calls++
		if calls < 3 {
			return errLost
		}
		return nil
	}, isLost)
	if err != nil || calls != 3 {
		t.Fatalf("%d calls, %v; want success on the third", calls, err)
	}
	other := errors.New("bad input")
	calls = 0
	err = retry.Do(t.Context(), retry.Policy{Attempts: 10}, failing(&calls, other), isLost)
	if err != other || calls != 1 {
		t.Fatalf("%d calls, %v; want the permanent error as is after one call", calls, err)
	}
}

// A wait that would end past the deadline is not started.
func TestGivesUpAtTheDeadline(t *testing.T) {
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	calls := 0
	err := retry.Do(ctx, retry.Policy{Budget: time.Hour, Base: time.Millisecond}, failing(&calls, errLost), isLost)
	if calls != 1 || !errors.Is(err, retry.ErrExhausted) || !errors.Is(err, errLost) {
		t.Fatalf("%d calls, %v", calls, err)
	}
	calls = 0
	err = retry.Do(t.Context(), retry.Policy{Budget: -1, Attempts: 2}, failing(&calls, errLost), isLost)
	if calls != 2 || !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("negative budget: %d calls, %v", calls, err)
	}
}

func TestContextCancelStopsTheWait(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := retry.Do(ctx, retry.Policy{Attempts: 100, Base: time.Hour, Max: time.Hour}, func() error {
		calls++
		cancel()
		return errLost
	}, nil)
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("%d calls, %v; want context.Canceled after one call", calls, err)
	}
	// With no backoff, the next try is not made once ctx has ended.
	ctx, cancel = context.WithCancel(t.Context())
	calls = 0
	err = retry.Do(ctx, retry.Policy{Attempts: 100}, func() error { calls++; cancel(); return errLost }, nil)
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("no backoff: %d calls, %v", calls, err)
	}
}

func TestJitterWithinTheCap(t *testing.T) {
	p := retry.Policy{Base: 10 * time.Millisecond, Max: time.Second}
	want := []time.Duration{10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i, w := range want {
		if got := p.Cap(i); got != w*time.Millisecond {
			t.Errorf("Cap(%d) = %v, want %v", i, got, w*time.Millisecond)
		}
	}
	if got := p.Cap(1 << 20); got != time.Second {
		t.Errorf("Cap(huge) = %v", got)
	}
	if got := (retry.Policy{Base: time.Hour}).Cap(200); got <= 0 {
		t.Errorf("uncapped Cap(200) = %v, want positive", got)
	}
	for i := range 12 {
		var low, high bool
		for range 2000 {
			w := p.Wait(i)
			if w < 0 || w > p.Cap(i) {
				t.Fatalf("Wait(%d) = %v outside [0, %v]", i, w, p.Cap(i))
			}
			low = low || w < p.Cap(i)/2
			high = high || w >= p.Cap(i)/2
		}
		if !low || !high {
			t.Errorf("Wait(%d) is not spread over [0, %v]", i, p.Cap(i))
		}
	}
	if w := (retry.Policy{}).Wait(3); w != 0 {
		t.Errorf("no backoff: Wait = %v", w)
	}
}
