package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/sessionhttp"
	"github.com/baton-run/baton/pkg/reducer"
)

// Idempotency-Key limits (see httpjson.Idempotency, which the chat
// endpoint shares).
const (
	// MaxIdempotencyKey is the longest Idempotency-Key accepted, in bytes.
	MaxIdempotencyKey = httpjson.MaxIdempotencyKey
	// ReceiptTTL is how long an Idempotency-Key is remembered.
	ReceiptTTL = sessionhttp.ReceiptTTL
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

// always is an answerFunc whose reply does not depend on the write: built
// once, here.
func always(status int, v any) answerFunc {
	rp, err := newReply(status, "", v)
	return func(reducer.State, []reducer.Fact) (reply, error) { return rp, err }
}

// send writes the reply of a write that succeeded: the one the write
// built to store under its Idempotency-Key (built, when its Status is
// set), else the one answer builds from next and written. It returns the
// error that building it met.
func send(w http.ResponseWriter, built *reply, answer answerFunc, next reducer.State, written []reducer.Fact) error {
	rp := *built
	if rp.Status == 0 {
		var err error
		if rp, err = answer(next, written); err != nil {
			return err
		}
	}
	writeReply(w, rp)
	return nil
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

// keyCheck is when an idempotent route reads the receipt under its
// request's Idempotency-Key.
type keyCheck bool

const (
	// receiptFirst reads it before the handler runs: for a route whose
	// operation may write something (a snapshot, a stream) before the
	// facts that take the key.
	receiptFirst keyCheck = true
	// writeFirst reads it only when the handler fails: for a route whose
	// operation is one compare-and-set of facts, which writes nothing when
	// the key is taken and fails (the reducer refusing what the earlier
	// request did already, or the key taken). A first request then reads
	// no receipt.
	writeFirst keyCheck = false
)

// idempotent handles the Idempotency-Key header of a POST route. Without
// one, h runs as it is. With one, a request the caller made before under
// the same key is answered what it was answered, writing nothing, and a
// different request under it is refused with 422; otherwise h runs, and its
// write stores its answer under the key in the same transaction (see
// writer). Keys are per caller, and only a request that wrote takes one: a
// refused request can be sent again under the same key. check says when
// the receipt is read; either way every request is answered alike.
func (a *core) idempotent(h func(http.ResponseWriter, *http.Request, string) error, check keyCheck) func(http.ResponseWriter, *http.Request, string) error {
	return func(w http.ResponseWriter, r *http.Request, caller string) error {
		k, keyed, err := httpjson.ReadIdempotency(w, r, caller, a.maxBody)
		if err != nil {
			return err
		}
		if !keyed {
			return h(w, r, caller)
		}
		if check == receiptFirst {
			if done, err := a.replay(w, r.Context(), k); done || err != nil {
				return err
			}
		}
		err = h(w, r.WithContext(context.WithValue(r.Context(), idemKey{}, k)), caller)
		if err == nil || (check == receiptFirst && !errors.Is(err, session.ErrReceiptTaken)) {
			return err
		}
		// Written first, the handler failed, perhaps because a request
		// under the key did what it asks already; or the key was taken
		// meanwhile by a request that committed. A receipt that cannot be
		// read is answered as it is when read first.
		if done, rerr := a.replay(w, r.Context(), k); done || rerr != nil {
			return rerr
		}
		return err
	}
}

// replay answers the request with the receipt under k, if there is one:
// its stored reply, or 422 if it answered another request.
func (a *core) replay(w http.ResponseWriter, ctx context.Context, k httpjson.Idempotency) (bool, error) {
	answer, ok, err := sessionhttp.Receipt(ctx, a.sessions, k)
	if err != nil || !ok {
		return false, err
	}
	var rp reply
	if err := json.Unmarshal(answer, &rp); err != nil {
		return false, fmt.Errorf("operator: decode receipt: %w", err)
	}
	w.Header().Set(httpjson.ReplayedHeader, "true")
	writeReply(w, rp)
	return true, nil
}

// writer is the session store a handler writes through: for a request with
// an Idempotency-Key, one that stores the reply answer builds with the
// write, under the key. The reply it returns is the one the committed
// write built (Status 0 until one did): the handler answers it (see send)
// instead of building it again.
func (a *core) writer(r *http.Request, answer answerFunc) (*session.Store, *reply) {
	built := new(reply)
	k, ok := r.Context().Value(idemKey{}).(httpjson.Idempotency)
	if !ok {
		return a.sessions, built
	}
	return sessionhttp.Writer(a.sessions, k, func(next reducer.State, written []reducer.Fact) ([]byte, error) {
		rp, err := answer(next, written)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(rp)
		if err == nil {
			*built = rp // the last attempt's is the one that commits
		}
		return b, err
	}), built
}
