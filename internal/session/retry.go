package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	retrypkg "github.com/baton-run/baton/internal/retry"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file holds how a write that lost its compare-and-set tries again:
// this process's posts to one session queue in a lane, and the others
// back off (retry).

// lanes queue this process's posts by session: posts to one session take
// turns instead of racing each other for its compare-and-set, and only
// writers elsewhere (other processes, the runner) meet retry's backoff.
type lanes struct {
	mu sync.Mutex
	m  map[string]*lane
}

type lane struct {
	turn  chan struct{} // holds a token while a post is in the lane
	users int           // posts in or waiting for the lane
	// last is the state the lane's last post committed, for the next post
	// to catch up from; only the post in the lane touches it.
	last *reducer.State
}

// enter waits for session id's lane and returns it, with the function that
// leaves it.
func (s *core) enter(ctx context.Context, id string) (l *lane, leave func(), err error) {
	root := s.root()
	ls := root.lanes.Load()
	if ls == nil {
		root.lanes.CompareAndSwap(nil, &lanes{m: map[string]*lane{}})
		ls = root.lanes.Load()
	}
	ls.mu.Lock()
	l = ls.m[id]
	if l == nil {
		l = &lane{turn: make(chan struct{}, 1)}
		ls.m[id] = l
	}
	l.users++
	ls.mu.Unlock()
	done := func() {
		ls.mu.Lock()
		if l.users--; l.users == 0 {
			delete(ls.m, id)
		}
		ls.mu.Unlock()
	}
	select {
	case l.turn <- struct{}{}:
		return l, func() { <-l.turn; done() }, nil
	case <-ctx.Done():
		done()
		return nil, nil, ctx.Err()
	}
}

// LostRace reports whether err is a write that lost its race: another
// writer committed first (ErrConflict), or what it committed makes the
// fact illegal now (reducer.ErrIllegal). The one test of it.
func LostRace(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, reducer.ErrIllegal)
}

// RetryBudget is the longest retry keeps trying; a shorter context
// deadline bounds it further.
const RetryBudget = 10 * time.Second

// DefaultRetry is the policy of a store whose Config.Retry is zero, for
// writers that lost a race and try again (the session store's retry and
// the runner's commits): RetryBudget in all, full jitter under a cap
// doubling from 10 ms to 1 s.
func DefaultRetry() retrypkg.Policy {
	return retrypkg.Policy{Budget: RetryBudget, Base: 10 * time.Millisecond, Max: time.Second}
}

// RetryPolicy is the store's policy for writers that lost a race:
// Config.Retry, or DefaultRetry when it is zero.
func (s *core) RetryPolicy() retrypkg.Policy {
	if s.Retry == (retrypkg.Policy{}) {
		return DefaultRetry()
	}
	return s.Retry
}

// retry runs a load-decide-append cycle again when it lost a race, for
// transitions that stay legal whoever else commits (a message, an answer to
// one of several approvals), until it wins, fails otherwise, or runs out of
// time: then it returns an error matching ErrBusy and ErrConflict.
//
// Each compare-and-set round on a session has exactly one winner, so n
// writers arriving at once need n rounds. A loser waits a random time
// between zero and a cap that doubles with each loss, from 10 ms up to 1 s
// (full jitter), so the losers spread out instead of colliding again, and
// the log keeps dense seqs and reducer-checked facts. This was chosen over
// an inbox written without the compare-and-set: that would need another
// writer to move messages into the log, and a message would not yet be a
// fact when the API accepts it. Posts from one process do not even race:
// they queue per session (see lanes), so only writers in other processes
// and the runner meet the backoff.
func (s *core) retry(ctx context.Context, f func() error) error {
	err := retrypkg.Do(ctx, s.RetryPolicy(), f, func(err error) bool { return errors.Is(err, ErrConflict) })
	if errors.Is(err, retrypkg.ErrExhausted) {
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	return err
}
