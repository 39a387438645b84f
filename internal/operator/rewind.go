package operator

import (
	"errors"
	"net/http"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/idempotency"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// The routes that go back in a session: rewind it to a point, or fork a
// new session from one (session.Store.Rewind and Fork).

func (a *sessionRoutes) rewind(w http.ResponseWriter, r *http.Request, caller string) error {
	return a.goBack(w, r, caller, false)
}

func (a *sessionRoutes) fork(w http.ResponseWriter, r *http.Request, caller string) error {
	return a.goBack(w, r, caller, true)
}

func (a *sessionRoutes) goBack(w http.ResponseWriter, r *http.Request, caller string, fork bool) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in api.RewindRequest
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	if err := in.Point.Check(); err != nil {
		return httpjson.Refuse(http.StatusBadRequest, "%v", err)
	}
	to, status := id, http.StatusOK
	if fork {
		to, status = ids.New("s"), http.StatusCreated
	}
	answer := func(next reducer.State, written []reducer.Fact) (idempotency.Reply, error) {
		out := api.Rewound{Session: to, Status: next.Status, Effects: []reducer.Effect{}}
		for _, f := range written {
			if f.Rewind != nil {
				out.Point, out.From = f.Rewind.Point, f.Rewind.From
				out.Effects = append(out.Effects, f.Rewind.Effects...)
			}
		}
		location := ""
		if fork {
			location = "/sessions/" + to
		}
		return idempotency.NewReply(status, location, out)
	}
	store, built := a.writer(r, answer)
	var rw session.Rewound
	if fork {
		rw, err = store.Fork(r.Context(), id, to, operatorActor(caller), in.Point, in.Cancel)
	} else {
		rw, err = store.Rewind(r.Context(), id, operatorActor(caller), in.Point, in.Cancel)
	}
	var pe *reducer.PointError
	switch {
	case errors.As(err, &pe):
		return httpjson.Refuse(http.StatusBadRequest, "%s", pe.Error())
	case errors.Is(err, session.ErrTurnOpen):
		return httpjson.Refuse(http.StatusConflict, "a turn is open: cancel it first, or send \"cancel\": true")
	case errors.Is(err, session.ErrPointGone):
		return httpjson.Refuse(http.StatusGone, "the conversation at that point is gone (retention swept its snapshot)")
	case err != nil:
		return err
	}
	f := reducer.Fact{Type: reducer.SessionRewound, Rewind: &rw.Rewind}
	return idempotency.Send(w, built, answer, rw.State, []reducer.Fact{f})
}
