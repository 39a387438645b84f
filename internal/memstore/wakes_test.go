package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/memstore"
	"github.com/baton-run/baton/internal/wake"
)

func TestWakesComeDueAfterTheirDelay(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	q := memstore.NewWakes(clk.Clock())
	ctx := context.Background()
	if err := q.Wake(ctx, wake.Wake{Session: "s1", Reason: wake.Message}, 0); err != nil {
		t.Fatal(err)
	}
	if err := q.Wake(ctx, wake.Wake{Session: "s1", Reason: wake.Throttled}, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := q.Wake(ctx, wake.Wake{Session: "s2", Reason: wake.Message}, 0); err != nil {
		t.Fatal(err)
	}
	if err := q.Wake(ctx, wake.Wake{Reason: wake.Message}, 0); err == nil {
		t.Fatal("a wake with no session was kept")
	}
	if got := q.Due("s1"); len(got) != 1 || got[0].Reason != wake.Message {
		t.Fatalf("due now: %+v, want the undelayed wake only", got)
	}
	if w, ok := q.Take("s1"); !ok || w.Reason != wake.Message {
		t.Fatalf("take: %+v %v", w, ok)
	}
	if _, ok := q.Take("s1"); ok {
		t.Fatal("took the delayed wake before its delay")
	}
	clk.Advance(3 * time.Second)
	if w, ok := q.Take("s1"); !ok || w.Reason != wake.Throttled || w.Delay != 3*time.Second {
		t.Fatalf("take after the delay: %+v %v", w, ok)
	}
	if err := q.Wake(ctx, wake.Wake{Session: "s1", Reason: wake.Throttled}, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := q.TakeDue(); len(got) != 1 || got[0].Session != "s2" {
		t.Fatalf("take due: %+v, want s2's only", got)
	}
	q.Drain()
	if got := q.Due("s2"); len(got) != 0 {
		t.Fatalf("after Drain: %+v", got)
	}
}
