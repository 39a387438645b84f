package clock

import (
	"sync"
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
