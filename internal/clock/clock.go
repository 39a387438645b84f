package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock returns the current time. The nil Clock is the wall clock, so a
// struct field of type Clock works unset.
type Clock func() time.Time

// Now is c's current time: time.Now when c is nil.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

// Until is the time from c's now to t.
func (c Clock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Since is the time from t to c's now.
func (c Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Fake is a clock that moves only when told. Its zero value is not
// usable; NewFake starts one. It is safe for concurrent use.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake is a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now is the fake's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Clock is the fake as a Clock.
func (f *Fake) Clock() Clock { return f.Now }

// Advance moves the fake forward by d (a negative d moves it back).
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// Set moves the fake to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
}

// Shifted is the wall clock moved forward by what Advance adds: time goes
// on passing, so budgets and timers behave as on the wall clock, and a
// test jumps past a lease or an expiry instead of waiting for it. Its zero
// value is the wall clock. It is safe for concurrent use.
type Shifted struct {
	off atomic.Int64 // nanoseconds
}

// Now is the wall clock's time plus the shift.
func (s *Shifted) Now() time.Time { return time.Now().Add(time.Duration(s.off.Load())) }

// Clock is the shifted clock as a Clock.
func (s *Shifted) Clock() Clock { return s.Now }

// Advance shifts the clock forward by d (back, for a negative d).
func (s *Shifted) Advance(d time.Duration) { s.off.Add(int64(d)) }

// Pass shifts the clock just past t (by a millisecond), if it is not past
// it already: what a test waits for when it waits out a lease.
func (s *Shifted) Pass(t time.Time) {
	if d := t.Sub(s.Now()); d >= 0 {
		s.Advance(d + time.Millisecond)
	}
}
