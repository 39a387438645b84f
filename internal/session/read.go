package session

import (
	"context"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file holds the store's reads of the fact log: facts after a seq,
// head items by session, by owner and as the due index, and receipts; and
// the one write to a head outside an append, the tick's record of a
// re-sent wake (Rewoke).
// Callers above the session layer read storage only through these and
// the stream methods (stream.go).

// Facts returns session id's facts after seq after, in order.
func (s *stores) Facts(ctx context.Context, id string, after int64) ([]reducer.Fact, error) {
	return s.facts.Facts(ctx, id, after)
}

// Head returns session id's head item; an error matching
// dynamo.ErrNotFound when there is none.
func (s *stores) Head(ctx context.Context, id string) (dynamo.Head, error) {
	return s.facts.Head(ctx, id)
}

// ByOwner lists up to limit heads of owner's sessions from cursor, and
// the cursor of the next page ("" at the end).
func (s *stores) ByOwner(ctx context.Context, owner string, limit int32, cursor string) ([]dynamo.Head, string, error) {
	return s.facts.ByOwner(ctx, owner, limit, cursor)
}

// Due calls fn with each head of shard due before before, reading pages
// of limit, and returns the number of pages read.
func (s *stores) Due(ctx context.Context, shard int, before time.Time, limit int32, fn func(dynamo.Head) error) (int, error) {
	return s.facts.Due(ctx, shard, before, limit, fn)
}

// Rewoke records on head h, if it is still h, that the tick re-sent its
// session's wake at at, and moves its due time to next; a head that moved
// on fails it with an error matching dynamo.ErrConflict.
func (s *stores) Rewoke(ctx context.Context, h dynamo.Head, at, next time.Time) error {
	return s.facts.Rewoke(ctx, h, at, next)
}

// Receipt returns the receipt stored under idempotency key key, if any.
func (s *stores) Receipt(ctx context.Context, key string) (dynamo.Receipt, bool, error) {
	return s.facts.Receipt(ctx, key)
}
