package session

import (
	"context"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	lc "github.com/baton-run/baton/internal/lifecycle"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file holds FactLog, the fact log the store consumes
// (*dynamo.Store is one).

// FactLog is what the session layer needs of a session's fact log: read
// the facts back to the newest snapshot (Tail) or after a seq (Facts),
// append facts with the compare-and-set, alone or with an idempotency
// receipt in the same transaction, and read the head item, by session,
// by owner, or as the due index; and bury, purge and sweep sessions for
// deletion and retention. Every append happens whole or not at
// all, and fails with an error matching dynamo.ErrConflict when another
// writer took the next seq first.
//
// *dynamo.Store implements it on DynamoDB.
type FactLog interface {
	Tail(ctx context.Context, session string) ([]reducer.Fact, error)
	Facts(ctx context.Context, session string, after int64) ([]reducer.Fact, error)
	Append(ctx context.Context, session string, next reducer.State, facts ...reducer.Fact) error
	AppendWithReceipt(ctx context.Context, session string, next reducer.State, rc *dynamo.Receipt, facts ...reducer.Fact) error
	Head(ctx context.Context, session string) (dynamo.Head, error)
	Due(ctx context.Context, shard int, before time.Time, limit int32, fn func(dynamo.Head) error) (int, error)
	// Rewoke records on the head h, if it is still h, that the tick
	// re-sent its session's wake at at, and moves its due time to next
	// (dynamo.Store.Rewoke); a head that changed fails it with an error
	// matching dynamo.ErrConflict.
	Rewoke(ctx context.Context, h dynamo.Head, at, next time.Time) error
	ByOwner(ctx context.Context, owner string, limit int32, cursor string) ([]dynamo.Head, string, error)
	Receipt(ctx context.Context, key string) (dynamo.Receipt, bool, error)

	// Deletion and retention (see Store.Delete and Store.Sweep).
	lc.Log
}

var _ FactLog = (*dynamo.Store)(nil)
