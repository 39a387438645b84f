package httpjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
)

// Idempotency-Key, as every POST of baton's APIs takes it.
const (
	// IdempotencyHeader names the key.
	IdempotencyHeader = "Idempotency-Key"
	// ReplayedHeader is set on an answer given again under a key.
	ReplayedHeader = "Idempotent-Replayed"
	// MaxIdempotencyKey is the longest key accepted, in bytes.
	MaxIdempotencyKey = 255
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
