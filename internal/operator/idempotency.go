package operator

import (
	"net/http"

	"github.com/baton-run/baton/internal/idempotency"
	"github.com/baton-run/baton/internal/session"
)

// The operator's routes take the Idempotency-Key as package idempotency
// handles it (the chat endpoint too): these are its names for them here.
type (
	reply      = idempotency.Reply
	answerFunc = idempotency.AnswerFunc
)

const (
	receiptFirst = idempotency.ReceiptFirst
	writeFirst   = idempotency.WriteFirst
)

var (
	newReply = idempotency.NewReply
	always   = idempotency.Always
	send     = idempotency.Send
)

// idempotent handles the Idempotency-Key header of a POST route (see
// idempotency.Guard.Route).
func (a *core) idempotent(h idempotency.Handler, check idempotency.Check) idempotency.Handler {
	return a.guard().Route(h, check)
}

// writer is the session store a handler writes through, and the reply
// its committed write built (see idempotency.Guard.Writer).
func (a *core) writer(r *http.Request, answer answerFunc) (*session.Store, *reply) {
	return a.guard().Writer(r, answer)
}

func (a *core) guard() idempotency.Guard {
	return idempotency.Guard{Sessions: a.sessions, MaxBody: a.maxBody}
}
