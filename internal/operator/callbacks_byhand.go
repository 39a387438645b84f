package operator

import (
	"errors"
	"net/http"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/idempotency"
	"github.com/baton-run/baton/pkg/reducer"
)

// completeCall is POST /sessions/{id}/callbacks/{toolCallId}: the
// session's owner completes by hand a tool call of the open turn that
// waits for its callback, with no token ({"output": …} or {"error": "…"},
// and a reason), as the token's holder would; the end is recorded as the
// operator's. A call with no callback in the open turn is a 404, one
// whose callback already ended a 409, one past its deadline a 410.
func (a *answerRoutes) completeCall(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	call, err := pathID(r, "toolCallId", "tool call")
	if err != nil {
		return err
	}
	var in api.CompleteCallRequest
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	if err := checkReason(in.Reason); err != nil {
		return err
	}
	res := callback.Result{Output: in.Output, Error: in.Error}
	answer := idempotency.Always(http.StatusAccepted, api.Accepted{Status: string(res.Status())})
	store, built := a.writer(r, answer)
	err = store.CompleteCall(r.Context(), id, call, operatorActor(caller), res, in.Reason)
	switch {
	case errors.Is(err, callback.ErrBadResult):
		return httpjson.Refuse(http.StatusBadRequest, "%v", err) // the store checks it first, and says what is wrong
	case errors.Is(err, callback.ErrUnknown):
		return httpjson.Refuse(http.StatusNotFound, "tool call %q of the session's open turn waits for no callback", httpjson.Clip(call))
	case errors.Is(err, callback.ErrDone):
		return httpjson.Refuse(http.StatusConflict, "the callback of tool call %q already ended: a call is completed once", httpjson.Clip(call))
	case err != nil:
		return err // an expired callback is a 410, as sessionhttp.Known says
	}
	return idempotency.Send(w, built, answer, reducer.State{}, nil)
}
