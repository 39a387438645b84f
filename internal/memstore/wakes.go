package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/wake"
)

// Wakes is a wake queue in memory: a wake.Waker that keeps what it is sent,
// delivering each wake no earlier than its delay after it was sent, on
// its clock. A test looks at the wakes due (Due) and takes them (Take). It
// is safe for concurrent use.
type Wakes struct {
	now  clock.Clock
	mu   sync.Mutex
	sent []Sent
}

// Sent is one wake sent: when, and the delay it was sent with.
type Sent struct {
	wake.Wake
	At    time.Time
	Delay time.Duration
}

var _ wake.Waker = (*Wakes)(nil)

// NewWakes is an empty queue on the clock now (nil is the wall clock).
func NewWakes(now clock.Clock) *Wakes { return &Wakes{now: now} }

// Wake keeps w as the queue would deliver it, refusing what the SQS waker
// refuses (see wake.Parse).
func (q *Wakes) Wake(ctx context.Context, w wake.Wake, delay time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: wake %s: %w", w.Session, err)
	}
	body, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("memstore: wake %s: %w", w.Session, err)
	}
	if w, err = wake.Parse(string(body)); err != nil {
		return fmt.Errorf("memstore: wake: %w", err)
	}
	at := q.now.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, Sent{Wake: w, At: at, Delay: max(delay, 0)})
	return nil
}

func (s Sent) due(now time.Time) bool { return !now.Before(s.At.Add(s.Delay)) }

// Due returns the wakes for session that are due now, in the order they
// were sent, without taking them.
func (q *Wakes) Due(session string) []Sent {
	now := q.now.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []Sent
	for _, s := range q.sent {
		if s.Session == session && s.due(now) {
			out = append(out, s)
		}
	}
	return out
}

// Take takes the first wake for session that is due now; ok is false when
// none is.
func (q *Wakes) Take(session string) (s Sent, ok bool) {
	now := q.now.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.IndexFunc(q.sent, func(s Sent) bool { return s.Session == session && s.due(now) })
	if i < 0 {
		return Sent{}, false
	}
	s = q.sent[i]
	q.sent = slices.Delete(q.sent, i, i+1)
	return s, true
}

// Drain forgets every wake sent so far.
func (q *Wakes) Drain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = nil
}

// TakeDue takes every wake that is due now, for any session, in the order
// they were sent.
func (q *Wakes) TakeDue() []Sent {
	now := q.now.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []Sent
	q.sent = slices.DeleteFunc(q.sent, func(s Sent) bool {
		if s.due(now) {
			out = append(out, s)
			return true
		}
		return false
	})
	return out
}
