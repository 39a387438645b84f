package chat

import (
	"context"
	"net/http"
	"slices"

	"github.com/baton-run/baton/internal/idempotency"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// replayAt is what a POST /chat under an Idempotency-Key stores with its
// write, as the operator's routes store their reply: where the stream that
// answered it starts, so that a retry is answered with the same turn's
// stream, from the same place, writing nothing.
type replayAt struct {
	Session string `json:"session"`
	// Stream is the answering turn's stream; empty when no turn had
	// started for the message yet: then it is the first turn started after
	// fact After.
	Stream string `json:"stream,omitempty"`
	After  int64  `json:"after,omitempty"`
	// Cursor, for approval answers, is where the client's copy ended (the
	// turn's last suspension), and Turn the assistant message the stream
	// continues.
	Cursor streams.Cursor `json:"cursor,omitempty"`
	Turn   string         `json:"turn,omitempty"`
}

// replayOf is where the answer to message msg starts, given the state its
// write leaves: the open turn's stream when the message was steered into
// it, else the next turn's.
func replayOf(id, msg string, next reducer.State) replayAt {
	is := func(m reducer.Message) bool { return m.ID == msg }
	if t := next.Turn; t != nil && (slices.ContainsFunc(t.Steer, is) || slices.ContainsFunc(t.Steered, is) || slices.ContainsFunc(t.Messages, is)) {
		return replayAt{Session: id, Stream: t.Stream}
	}
	return replayAt{Session: id, After: next.LastSeq}
}

// replayKeyed reads the request's Idempotency-Key, and answers a request
// made before under it (done true). It returns the key, nil without one.
func (h *handler) replayKeyed(ctx context.Context, w http.ResponseWriter, r *http.Request, caller string, v Version) (*idempotency.Key, bool, error) {
	k, keyed, err := idempotency.Read(w, r, caller, h.MaxBody)
	if err != nil || !keyed {
		return nil, false, err
	}
	done, err := h.replay(ctx, w, r, k, v)
	return &k, done, err
}

// replay answers the request with the stream the receipt under k names, if
// there is one (done true); a key used for another request is a 422.
func (h *handler) replay(ctx context.Context, w http.ResponseWriter, r *http.Request, k idempotency.Key, v Version) (bool, error) {
	at, ok, err := idempotency.Lookup[replayAt](ctx, h.Sessions, k)
	if err != nil || !ok {
		return false, err
	}
	stream := at.Stream
	if stream == "" {
		if stream, err = h.nextTurn(ctx, at.Session, at.After); err != nil {
			return false, err
		}
	}
	page, err := h.Sessions.ReadStream(ctx, at.Session, stream, at.Cursor)
	if err != nil {
		return false, err
	}
	var first []parts.Part
	if at.Turn != "" {
		first = []parts.Part{{Type: parts.Start, MessageID: at.Turn}}
	}
	idempotency.Replayed(w)
	h.serve(w, r, at.Session, stream, page, v, first)
	return true, nil
}

// taken answers a write that failed because its key was taken meanwhile,
// by a request that committed: as that request was answered.
func (h *handler) taken(ctx context.Context, w http.ResponseWriter, r *http.Request, key *idempotency.Key, v Version, err error) (bool, error) {
	if key == nil || !idempotency.Taken(err) {
		return false, nil
	}
	return h.replay(ctx, w, r, *key, v)
}

// writer is the session store a chat request writes through: with an
// Idempotency-Key, one that stores at, under the key, with the write.
func (h *handler) writer(key *idempotency.Key, at func(next reducer.State) replayAt) *session.Store {
	if key == nil {
		return h.Sessions
	}
	return idempotency.Record(h.Sessions, *key, func(next reducer.State, _ []reducer.Fact) (replayAt, error) {
		return at(next), nil
	}, nil)
}
