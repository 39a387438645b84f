package clock

import (
	"testing"
	"time"
)

func TestNilClockIsTheWallClock(t *testing.T) {
	t.Parallel()
	var c Clock
	before := time.Now()
	got := c.Now()
	if got.Before(before) || got.After(time.Now()) {
		t.Fatalf("nil clock read %v, not the wall clock", got)
	}
}

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := NewFake(start)
	c := f.Clock()
	if !c.Now().Equal(start) || !c.Now().Equal(start) {
		t.Fatalf("fake moved by itself: %v", c.Now())
	}
	f.Advance(90 * time.Second)
	if got := c.Now(); !got.Equal(start.Add(90 * time.Second)) {
		t.Fatalf("after Advance: %v", got)
	}
	if got := c.Until(start.Add(2 * time.Minute)); got != 30*time.Second {
		t.Fatalf("Until: %v", got)
	}
	if got := c.Since(start); got != 90*time.Second {
		t.Fatalf("Since: %v", got)
	}
	f.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("after Set: %v", got)
	}
}
