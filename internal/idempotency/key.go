package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/httpjson"
)

// Key is a request's Idempotency-Key as it is stored: the receipt key (the
// caller and the key, hashed: keys are per caller) and the hash of the
// request (method, path and body), which tells a retry from another
// request under the same key.
type Key struct{ Key, Request string }

// Read reads r's Idempotency-Key. Without one it reports false and leaves
// r as it is. With one it reads r's body, at most max bytes, and puts it
// back for the handler. A key sent twice, empty, too long or not printable
// ASCII, or a body too large, is refused.
func Read(w http.ResponseWriter, r *http.Request, caller string, max int64) (Key, bool, error) {
	values, has := r.Header[api.IdempotencyHeader]
	if !has {
		return Key{}, false, nil
	}
	key := values[0]
	if len(values) != 1 || !validKey(key) {
		return Key{}, false, httpjson.Refuse(http.StatusBadRequest, "%s must be sent once, with 1 to %d printable ASCII characters", api.IdempotencyHeader, api.MaxIdempotencyKey)
	}
	body, err := httpjson.ReadBody(w, r, max)
	if err != nil {
		return Key{}, false, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return Key{Key: digest(caller, key), Request: digest(r.Method, r.URL.Path, string(body))}, true, nil
}

func validKey(key string) bool {
	if key == "" || len(key) > api.MaxIdempotencyKey {
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
