package sessionhttp

import (
	"context"
	"net/http"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// ReceiptTTL is how long an Idempotency-Key is remembered.
const ReceiptTTL = 24 * time.Hour

// Receipts reads stored receipts by idempotency key; *session.Store is one.
type Receipts interface {
	Receipt(ctx context.Context, key string) (dynamo.Receipt, bool, error)
}

// Receipt returns the answer stored under k by the request that took the
// key, if one did. The key taken by another request is refused with 422.
func Receipt(ctx context.Context, facts Receipts, k httpjson.Idempotency) ([]byte, bool, error) {
	rc, ok, err := facts.Receipt(ctx, k.Key)
	if err != nil || !ok {
		return nil, false, err
	}
	if rc.Request != k.Request {
		return nil, false, httpjson.Refuse(http.StatusUnprocessableEntity, "this %s was used for a different request; send a new key with a new request", httpjson.IdempotencyHeader)
	}
	return rc.Answer, true, nil
}

// Writer returns s storing, in the same transaction as its write, the
// answer answer builds under k: a write under a key already taken fails
// with session.ErrReceiptTaken and writes nothing.
func Writer(s *session.Store, k httpjson.Idempotency, answer func(next reducer.State, written []reducer.Fact) ([]byte, error)) *session.Store {
	return s.WithReceipt(&session.Receipt{Key: k.Key, Request: k.Request, Expires: time.Now().Add(ReceiptTTL), Answer: answer})
}
