package session

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	retrypkg "github.com/baton-run/baton/internal/retry"
)

// TestRetryGivesUpBusyAtTheDeadline loses every race: retry stops before
// the context's deadline with an error matching ErrBusy and ErrConflict.
func TestRetryGivesUpBusyAtTheDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	tries := 0
	err := (&core{}).retry(ctx, func() error {
		tries++
		return fmt.Errorf("append: %w", ErrConflict)
	})
	if !errors.Is(err, ErrBusy) || !errors.Is(err, ErrConflict) {
		t.Fatalf("retry = %v; want ErrBusy and ErrConflict", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("retry ran past its deadline: %v", ctx.Err())
	}
	if tries < 2 {
		t.Fatalf("%d tries; want retries", tries)
	}
}

// TestRetryStopsOnOtherErrors returns the first error that is not a lost race.
func TestRetryStopsOnOtherErrors(t *testing.T) {
	t.Parallel()
	want := errors.New("boom")
	tries := 0
	err := (&core{}).retry(context.Background(), func() error {
		tries++
		if tries < 3 {
			return ErrConflict
		}
		return want
	})
	if !errors.Is(err, want) || tries != 3 {
		t.Fatalf("retry = %v after %d tries", err, tries)
	}
}

// TestRetryTakesTheStoresPolicy: a store's Config.Retry bounds its retry
// (here by attempts, with no deadline at all), and a zero one is
// DefaultRetry.
func TestRetryTakesTheStoresPolicy(t *testing.T) {
	t.Parallel()
	c := &core{Config: Config{Retry: retrypkg.Policy{Attempts: 3, Base: time.Millisecond, Max: time.Millisecond}}}
	tries := 0
	err := c.retry(context.Background(), func() error {
		tries++
		return ErrConflict
	})
	if !errors.Is(err, ErrBusy) || tries != 3 {
		t.Fatalf("retry = %v after %d tries; want ErrBusy after 3", err, tries)
	}
	if got := (&core{}).RetryPolicy(); got != DefaultRetry() {
		t.Fatalf("zero policy = %+v, want DefaultRetry", got)
	}
}
