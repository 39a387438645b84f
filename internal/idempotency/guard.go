package idempotency

import (
	"context"
	"net/http"

	"github.com/baton-run/baton/internal/session"
)

// Check is when a guarded route reads the receipt under its request's
// Idempotency-Key.
type Check bool

const (
	// ReceiptFirst reads it before the handler runs: for a route whose
	// operation may write something (a snapshot, a stream) before the
	// facts that take the key.
	ReceiptFirst Check = true
	// WriteFirst reads it only when the handler fails: for a route whose
	// operation is one compare-and-set of facts, which writes nothing when
	// the key is taken and fails (the reducer refusing what the earlier
	// request did already, or the key taken). A first request then reads
	// no receipt.
	WriteFirst Check = false
)

// Handler is a route's handler of a caller's request.
type Handler = func(w http.ResponseWriter, r *http.Request, caller string) error

// Guard handles the Idempotency-Key header of the POST routes whose
// writes go through Sessions, with request bodies of at most MaxBody
// bytes, and whose replies are Reply records.
type Guard struct {
	Sessions *session.Store
	MaxBody  int64
}

// ctxKey is the context key of a request's idempotency key.
type ctxKey struct{}

// Route handles the Idempotency-Key header of a POST route. Without one,
// h runs as it is. With one, a request the caller made before under the
// same key is answered what it was answered, writing nothing, and a
// different request under it is refused with 422; otherwise h runs, and
// its write stores its answer under the key in the same transaction (see
// Writer). Keys are per caller, and only a request that wrote takes one: a
// refused request can be sent again under the same key. check says when
// the receipt is read; either way every request is answered alike.
func (g Guard) Route(h Handler, check Check) Handler {
	return func(w http.ResponseWriter, r *http.Request, caller string) error {
		k, keyed, err := Read(w, r, caller, g.MaxBody)
		if err != nil {
			return err
		}
		if !keyed {
			return h(w, r, caller)
		}
		if check == ReceiptFirst {
			if done, err := g.replay(w, r.Context(), k); done || err != nil {
				return err
			}
		}
		err = h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, k)), caller)
		if err == nil || (check == ReceiptFirst && !Taken(err)) {
			return err
		}
		// Written first, the handler failed, perhaps because a request
		// under the key did what it asks already; or the key was taken
		// meanwhile by a request that committed. A receipt that cannot be
		// read is answered as it is when read first.
		if done, rerr := g.replay(w, r.Context(), k); done || rerr != nil {
			return rerr
		}
		return err
	}
}

// replay answers the request with the receipt under k, if there is one:
// its stored reply, or 422 if it answered another request.
func (g Guard) replay(w http.ResponseWriter, ctx context.Context, k Key) (bool, error) {
	rp, ok, err := Lookup[Reply](ctx, g.Sessions, k)
	if err != nil || !ok {
		return false, err
	}
	Replayed(w)
	Write(w, rp)
	return true, nil
}

// Writer is the session store a guarded handler writes through: for a
// request with an Idempotency-Key, one that stores the reply answer builds
// with the write, under the key. The reply it returns is the one the
// committed write built (Status 0 until one did): the handler answers it
// (see Send) instead of building it again.
func (g Guard) Writer(r *http.Request, answer AnswerFunc) (*session.Store, *Reply) {
	built := new(Reply)
	k, ok := r.Context().Value(ctxKey{}).(Key)
	if !ok {
		return g.Sessions, built
	}
	return Record(g.Sessions, k, answer, built), built
}
