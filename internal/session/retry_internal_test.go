package session

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestRetryGivesUpBusyAtTheDeadline loses every race: retry stops before
// the context's deadline with an error matching ErrBusy and ErrConflict.
func TestRetryGivesUpBusyAtTheDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	tries := 0
	err := retry(ctx, func() error {
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
	err := retry(context.Background(), func() error {
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
