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

func TestShiftedJumpsAndKeepsPassing(t *testing.T) {
	t.Parallel()
	var s Shifted
	c := s.Clock()
	if d := c.Now().Sub(time.Now()); d > time.Second || d < -time.Second {
		t.Fatalf("zero Shifted is %v off the wall clock", d)
	}
	lease := time.Now().Add(time.Hour)
	s.Pass(lease)
	if now := c.Now(); !now.After(lease) || now.After(lease.Add(time.Minute)) {
		t.Fatalf("after Pass(%v): %v", lease, now)
	}
	s.Pass(lease.Add(-time.Minute)) // already past: no move
	if now := c.Now(); now.After(lease.Add(time.Minute)) {
		t.Fatalf("Pass of a past time moved the clock to %v", now)
	}
	a := c.Now()
	for !c.Now().After(a) {
	}
	s.Advance(-time.Hour)
	if now := c.Now(); now.After(lease) {
		t.Fatalf("after moving back: %v", now)
	}
}
