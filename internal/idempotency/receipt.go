package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// TTL is how long an Idempotency-Key is remembered.
const TTL = 24 * time.Hour

// Receipts reads stored receipts by idempotency key; *session.Store is one.
type Receipts interface {
	Receipt(ctx context.Context, key string) (dynamo.Receipt, bool, error)
}

// Lookup returns the reply recorded under k by the request that took the
// key, decoded, if one did (ok true). The key taken by another request is
// refused with 422.
func Lookup[T any](ctx context.Context, receipts Receipts, k Key) (rp T, ok bool, err error) {
	rc, ok, err := receipts.Receipt(ctx, k.Key)
	if err != nil || !ok {
		return rp, false, err
	}
	if rc.Request != k.Request {
		return rp, false, httpjson.Refuse(http.StatusUnprocessableEntity, "this %s was used for a different request; send a new key with a new request", api.IdempotencyHeader)
	}
	if err := json.Unmarshal(rc.Answer, &rp); err != nil {
		return rp, false, fmt.Errorf("idempotency: decode receipt: %w", err)
	}
	return rp, true, nil
}

// Replayed marks w's answer as one given again under a key.
func Replayed(w http.ResponseWriter) { w.Header().Set(api.ReplayedHeader, "true") }

// Taken reports whether err says a write under a key failed because the
// key was taken meanwhile, by a request that committed.
func Taken(err error) bool { return errors.Is(err, session.ErrReceiptTaken) }

// Record returns s storing, in the same transaction as its write, the
// reply answer builds (JSON-encoded) under k: a write under a key already
// taken fails with session.ErrReceiptTaken and writes nothing. When built
// is not nil, it is set to the reply of each attempt that encoded: the
// last is the one that commits.
func Record[T any](s *session.Store, k Key, answer func(next reducer.State, written []reducer.Fact) (T, error), built *T) *session.Store {
	return s.WithReceipt(&session.Receipt{Key: k.Key, Request: k.Request, Expires: time.Now().Add(TTL),
		Answer: func(next reducer.State, written []reducer.Fact) ([]byte, error) {
			rp, err := answer(next, written)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(rp)
			if err == nil && built != nil {
				*built = rp
			}
			return b, err
		}})
}
