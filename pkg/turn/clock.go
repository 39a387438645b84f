package turn

import (
	"context"
	"time"
)

// This file holds the run's clock: the session store's (session.Store.Now),
// from which an invocation takes its deadline and lease.

// now is the time on the run's clock.
func (ru *core) now() time.Time { return ru.r.Sessions.Clock() }

// until is ctx cut at t on the run's clock: after the time from now to t,
// which passes on the wall clock.
func (ru *core) until(ctx context.Context, t time.Time) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.Sub(ru.now()))
}
