package operator

import (
	"errors"
	"net/http"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/pkg/reducer"
)

// callbackRoutes are the routes a callback's token holder calls: they
// take the token in the path as their only credential, so they are
// public (no JWT), and the token is never logged (httpjson.LogPath).
type callbackRoutes struct{ core }

// holder is the actor of a token's holder.
var holder = reducer.Actor{Kind: reducer.ActorCallback, ID: "token"}

// routes is the public callback routes' table.
func (c *callbackRoutes) routes() map[string]func(http.ResponseWriter, *http.Request, string) error {
	return map[string]func(http.ResponseWriter, *http.Request, string) error{
		"POST /callbacks/{token}":           c.complete,
		"POST /callbacks/{token}/heartbeat": c.heartbeat,
	}
}

// token is the request's token, refused as unknown before any read when
// it is not a token's shape.
func token(r *http.Request) (string, error) {
	t := r.PathValue("token")
	if _, err := callback.Parse(t); err != nil {
		return "", httpjson.Refuse(http.StatusNotFound, "no such callback")
	}
	return t, nil
}

func (c *callbackRoutes) complete(w http.ResponseWriter, r *http.Request, _ string) error {
	tok, err := token(r)
	if err != nil {
		return err
	}
	var in api.CallbackRequest
	if err := decode(w, r, c.maxBody, &in, false); err != nil {
		return err
	}
	res := callback.Result{Output: in.Output, Error: in.Error}
	err = c.sessions.Complete(r.Context(), tok, holder, res)
	if errors.Is(err, callback.ErrBadResult) {
		return httpjson.Refuse(http.StatusBadRequest, "%v", err) // the store checks it first, and says what is wrong
	}
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, api.CallbackAnswer{Status: string(res.Status())})
	return nil
}

func (c *callbackRoutes) heartbeat(w http.ResponseWriter, r *http.Request, _ string) error {
	tok, err := token(r)
	if err != nil {
		return err
	}
	if _, err := httpjson.ReadBody(w, r, c.maxBody); err != nil {
		return err
	}
	cb, err := c.sessions.Heartbeat(r.Context(), tok, holder)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, api.CallbackAnswer{Status: "open", Deadline: cb.Deadline()})
	return nil
}
