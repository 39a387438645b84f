package idempotency

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/baton-run/baton/pkg/reducer"
)

// Reply is the JSON answer to a request that wrote: what a retry under the
// same Idempotency-Key is answered again.
type Reply struct {
	Status   int             `json:"status"`
	Location string          `json:"location,omitempty"`
	Body     json.RawMessage `json:"body"`
}

// AnswerFunc builds a handler's reply from the state after its write and
// the facts the write commits.
type AnswerFunc func(next reducer.State, written []reducer.Fact) (Reply, error)

// NewReply is the reply of status, Location location (none when empty)
// and v, JSON-encoded, as its body.
func NewReply(status int, location string, v any) (Reply, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Reply{}, fmt.Errorf("idempotency: encode reply: %w", err)
	}
	return Reply{Status: status, Location: location, Body: b}, nil
}

// Always is an AnswerFunc whose reply does not depend on the write: built
// once, here.
func Always(status int, v any) AnswerFunc {
	rp, err := NewReply(status, "", v)
	return func(reducer.State, []reducer.Fact) (Reply, error) { return rp, err }
}

// Send writes the reply of a write that succeeded: the one the write
// built to store under its Idempotency-Key (built, when its Status is
// set), else the one answer builds from next and written. It returns the
// error that building it met.
func Send(w http.ResponseWriter, built *Reply, answer AnswerFunc, next reducer.State, written []reducer.Fact) error {
	rp := *built
	if rp.Status == 0 {
		var err error
		if rp, err = answer(next, written); err != nil {
			return err
		}
	}
	Write(w, rp)
	return nil
}

// Write writes rp, JSON, not to be cached or sniffed.
func Write(w http.ResponseWriter, rp Reply) {
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
