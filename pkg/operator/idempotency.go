package operator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/baton-run/baton/pkg/httpjson"

	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/session"
)

// Idempotency-Key limits.
const (
	// MaxIdempotencyKey is the longest Idempotency-Key accepted, in bytes.
	MaxIdempotencyKey = 255
	// ReceiptTTL is how long an Idempotency-Key is remembered.
	ReceiptTTL = 24 * time.Hour
)

const (
	idempotencyHeader = "Idempotency-Key"
	replayedHeader    = "Idempotent-Replayed"
)

// reply is the answer to a request that wrote: what a retry under the same
// Idempotency-Key is answered again.
type reply struct {
	Status   int             `json:"status"`
	Location string          `json:"location,omitempty"`
	Body     json.RawMessage `json:"body"`
}

// answerFunc builds a handler's reply from the state after its write and
// the facts the write commits.
type answerFunc func(next reducer.State, written []reducer.Fact) (reply, error)

func newReply(status int, location string, v any) (reply, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return reply{}, fmt.Errorf("operator: encode reply: %w", err)
	}
	return reply{Status: status, Location: location, Body: b}, nil
}

// always is an answerFunc whose reply does not depend on the write.
func always(status int, v any) answerFunc {
	return func(reducer.State, []reducer.Fact) (reply, error) { return newReply(status, "", v) }
}

// send returns a function that writes a reply as writeJSON would have
// written its body, or returns the error that building it met.
func send(w http.ResponseWriter) func(reply, error) error {
	return func(rp reply, err error) error {
		if err != nil {
			return err
		}
		writeReply(w, rp)
		return nil
	}
}

func writeReply(w http.ResponseWriter, rp reply) {
	h := w.Header()
	if rp.Location != "" {
		h.Set("Location", rp.Location)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(rp.Status)
	// The status is sent; a failed write means the client went away.
	_, _ = w.Write(append(bytes.Clone(rp.Body), '\n'))
}

// idemKey is the context key of a request's idempotency.
type idemKey struct{}

// idem is a request's receipt key (the caller and the Idempotency-Key,
// hashed) and the hash of the request itself.
type idem struct{ key, request string }

// idempotent handles the Idempotency-Key header of a POST route. Without
// one, h runs as it is. With one, a request the caller made before under
// the same key is answered what it was answered, writing nothing, and a
// different request under it is refused with 422; otherwise h runs, and its
// write stores its answer under the key in the same transaction (see
// writer). Keys are per caller, and only a request that wrote takes one: a
// refused request can be sent again under the same key.
func (a *api) idempotent(h func(http.ResponseWriter, *http.Request, string) error) func(http.ResponseWriter, *http.Request, string) error {
	return func(w http.ResponseWriter, r *http.Request, caller string) error {
		values, has := r.Header[idempotencyHeader]
		if !has {
			return h(w, r, caller)
		}
		key := values[0]
		if len(values) != 1 || !validKey(key) {
			return httpjson.Refuse(http.StatusBadRequest, "%s must be sent once, with 1 to %d printable ASCII characters", idempotencyHeader, MaxIdempotencyKey)
		}
		body, err := readBody(w, r, a.maxBody)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		k := idem{key: digest(caller, key), request: digest(r.Method, r.URL.Path, string(body))}
		if done, err := a.replay(w, r.Context(), k); done || err != nil {
			return err
		}
		err = h(w, r.WithContext(context.WithValue(r.Context(), idemKey{}, k)), caller)
		if errors.Is(err, session.ErrReceiptTaken) {
			// The same key was used by a request that committed meanwhile.
			if done, rerr := a.replay(w, r.Context(), k); done || rerr != nil {
				return rerr
			}
		}
		return err
	}
}

// replay answers the request with the receipt under k.key, if there is one:
// its stored reply, or 422 if it answered another request.
func (a *api) replay(w http.ResponseWriter, ctx context.Context, k idem) (bool, error) {
	rc, ok, err := a.sessions.Facts.Receipt(ctx, k.key)
	if err != nil || !ok {
		return false, err
	}
	if rc.Request != k.request {
		return false, httpjson.Refuse(http.StatusUnprocessableEntity, "this %s was used for a different request; send a new key with a new request", idempotencyHeader)
	}
	var rp reply
	if err := json.Unmarshal(rc.Answer, &rp); err != nil {
		return false, fmt.Errorf("operator: decode receipt: %w", err)
	}
	w.Header().Set(replayedHeader, "true")
	writeReply(w, rp)
	return true, nil
}

// writer is the session store a handler writes through: for a request with
// an Idempotency-Key, one that stores the reply answer builds with the
// write, under the key.
func (a *api) writer(r *http.Request, answer answerFunc) *session.Store {
	k, ok := r.Context().Value(idemKey{}).(idem)
	if !ok {
		return a.sessions
	}
	return a.sessions.WithReceipt(&session.Receipt{
		Key: k.key, Request: k.request, Expires: time.Now().Add(ReceiptTTL),
		Answer: func(next reducer.State, written []reducer.Fact) ([]byte, error) {
			rp, err := answer(next, written)
			if err != nil {
				return nil, err
			}
			return json.Marshal(rp)
		},
	})
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
