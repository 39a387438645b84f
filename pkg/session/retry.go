package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
	retrypkg "github.com/baton-run/baton/pkg/retry"
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
func (s *Store) enter(ctx context.Context, id string) (l *lane, leave func(), err error) {
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

// Bounds on retry.
const (
	// RetryBudget is the longest retry keeps trying; a shorter context
	// deadline bounds it further.
	RetryBudget = 10 * time.Second
	backoffBase = 10 * time.Millisecond
	backoffCap  = time.Second
)

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
func retry(ctx context.Context, f func() error) error {
	p := retrypkg.Policy{Budget: RetryBudget, Base: backoffBase, Max: backoffCap}
	err := retrypkg.Do(ctx, p, f, func(err error) bool { return errors.Is(err, ErrConflict) })
	if errors.Is(err, retrypkg.ErrExhausted) {
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	return err
}
