package httpjson

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// Idempotency-Key, as every POST of baton's APIs takes it.
const (
	// IdempotencyHeader names the key.
	IdempotencyHeader = "Idempotency-Key"
	// ReplayedHeader is set on an answer given again under a key.
	ReplayedHeader = "Idempotent-Replayed"
	// MaxIdempotencyKey is the longest key accepted, in bytes.
	MaxIdempotencyKey = 255
	// ReceiptTTL is how long a key is remembered.
	ReceiptTTL = 24 * time.Hour
)

// Idempotency is a request's Idempotency-Key as it is stored: the receipt
// key (the caller and the key, hashed: keys are per caller) and the hash
// of the request (method, path and body), which tells a retry from another
// request under the same key.
type Idempotency struct{ Key, Request string }

// ReadIdempotency reads r's Idempotency-Key. Without one it reports false
// and leaves r as it is. With one it reads r's body, at most max bytes,
// and puts it back for the handler. A key sent twice, empty, too long or
// not printable ASCII, or a body too large, is refused.
func ReadIdempotency(w http.ResponseWriter, r *http.Request, caller string, max int64) (Idempotency, bool, error) {
	values, has := r.Header[IdempotencyHeader]
	if !has {
		return Idempotency{}, false, nil
	}
	key := values[0]
	if len(values) != 1 || !validKey(key) {
		return Idempotency{}, false, Refuse(http.StatusBadRequest, "%s must be sent once, with 1 to %d printable ASCII characters", IdempotencyHeader, MaxIdempotencyKey)
	}
	body, err := ReadBody(w, r, max)
	if err != nil {
		return Idempotency{}, false, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return Idempotency{Key: digest(caller, key), Request: digest(r.Method, r.URL.Path, string(body))}, true, nil
}

// ReadBody reads the request body, refusing one larger than max bytes
// with 413.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		if tooBig, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, Refuse(http.StatusRequestEntityTooLarge, "request body is larger than %d bytes", tooBig.Limit)
		}
		return nil, Refuse(http.StatusBadRequest, "cannot read the request body")
	}
	return body, nil
}

// Receipts reads stored receipts by idempotency key; *session.Store is one.
type Receipts interface {
	Receipt(ctx context.Context, key string) (dynamo.Receipt, bool, error)
}

// Receipt returns the answer stored under k by the request that took the
// key, if one did. The key taken by another request is refused with 422.
func (k Idempotency) Receipt(ctx context.Context, facts Receipts) ([]byte, bool, error) {
	rc, ok, err := facts.Receipt(ctx, k.Key)
	if err != nil || !ok {
		return nil, false, err
	}
	if rc.Request != k.Request {
		return nil, false, Refuse(http.StatusUnprocessableEntity, "this %s was used for a different request; send a new key with a new request", IdempotencyHeader)
	}
	return rc.Answer, true, nil
}

// Writer returns s storing, in the same transaction as its write, the
// answer answer builds under k: a write under a key already taken fails
// with session.ErrReceiptTaken and writes nothing.
func (k Idempotency) Writer(s *session.Store, answer func(next reducer.State, written []reducer.Fact) ([]byte, error)) *session.Store {
	return s.WithReceipt(&session.Receipt{Key: k.Key, Request: k.Request, Expires: time.Now().Add(ReceiptTTL), Answer: answer})
}

func validKey(key string) bool {
	if key == "" || len(key) > MaxIdempotencyKey {
		return false
	}
	for i := range len(key) {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// digest hashes parts, each ended by a zero byte so that no two lists of
// parts give the same input.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
