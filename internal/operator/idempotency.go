package operator

import (
	"net/http"

	"github.com/baton-run/baton/internal/idempotency"
	"github.com/baton-run/baton/internal/session"
)

// idempotent handles the Idempotency-Key header of a POST route (see
// idempotency.Guard.Route).
func (a *core) idempotent(h idempotency.Handler, check idempotency.Check) idempotency.Handler {
	return a.guard().Route(h, check)
}

// writer is the session store a handler writes through, and the reply
// its committed write built (see idempotency.Guard.Writer).
func (a *core) writer(r *http.Request, answer idempotency.AnswerFunc) (*session.Store, *idempotency.Reply) {
	return a.guard().Writer(r, answer)
}

func (a *core) guard() idempotency.Guard {
	return idempotency.Guard{Sessions: a.sessions, MaxBody: a.maxBody}
}
