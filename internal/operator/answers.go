package operator

import (
	"errors"
	"github.com/baton-run/baton/internal/idempotency"
	"net/http"
	"strings"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// answerRoutes are the routes that answer what an open turn waits for or
// steer it: approvals, verdicts, cancels, spend caps, timers and schedules.
type answerRoutes struct{ core }

func checkReason(reason string) error {
	if len(reason) > MaxReason {
		return httpjson.Refuse(http.StatusBadRequest, "reason is %d bytes, longer than the %d allowed", len(reason), MaxReason)
	}
	return nil
}

func (a *answerRoutes) answer(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	approval, err := pathID(r, "approvalId", "approval")
	if err != nil {
		return err
	}
	var in api.AnswerRequest
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	if err := checkReason(in.Reason); err != nil {
		return err
	}
	answer := idempotency.Always(http.StatusAccepted, api.Accepted{Status: string(in.Decision)})
	store, built := a.writer(r, answer)
	err = store.Answer(r.Context(), id, operatorActor(caller), reducer.Answer{ApprovalID: approval, Decision: in.Decision, Reason: in.Reason, Input: in.Input, Output: in.Output})
	switch { // the reducer decides both
	case errors.Is(err, reducer.ErrBadAnswer):
		return httpjson.Refuse(http.StatusBadRequest, "%s (a decision is approve, deny, edit with input, or respond with output)", reducer.RefusalReason(err))
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "approval %q is not pending", httpjson.Clip(approval))
	}
	if err != nil {
		return err
	}
	return idempotency.Send(w, built, answer, reducer.State{}, nil)
}

func (a *answerRoutes) cancel(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in api.CancelRequest
	if err := decode(w, r, a.maxBody, &in, true); err != nil {
		return err
	}
	if err := checkReason(in.Reason); err != nil {
		return err
	}
	answer := idempotency.Always(http.StatusAccepted, api.Accepted{Status: "cancelled"})
	store, built := a.writer(r, answer)
	err = store.Cancel(r.Context(), id, operatorActor(caller), in.Reason)
	if errors.Is(err, session.ErrNoTurn) {
		return httpjson.Refuse(http.StatusConflict, "the session has no open turn to cancel")
	}
	if err != nil {
		return err
	}
	return idempotency.Send(w, built, answer, reducer.State{}, nil)
}

func (a *answerRoutes) settle(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	execution, err := pathID(r, "executionId", "execution")
	if err != nil {
		return err
	}
	var in api.VerdictRequest
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	answer := idempotency.Always(http.StatusAccepted, api.Accepted{Status: string(in.Verdict)})
	store, built := a.writer(r, answer)
	err = store.Settle(r.Context(), id, operatorActor(caller), execution, in.Verdict)
	switch { // the reducer decides both
	case errors.Is(err, reducer.ErrBadAnswer):
		return httpjson.Refuse(http.StatusBadRequest, "verdict must be %q or %q", reducer.Rerun, reducer.Abandon)
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "execution %q awaits no verdict", httpjson.Clip(execution))
	}
	if err != nil {
		return err
	}
	return idempotency.Send(w, built, answer, reducer.State{}, nil)
}

// raise sets new spend caps for a turn suspended at a limit, which then
// resumes under them. Zero or absent fields keep the caps they would
// replace; a turn not suspended for a limit is a 409.
func (a *answerRoutes) raise(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in api.RaiseRequest
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	answer := idempotency.Always(http.StatusAccepted, api.Accepted{Status: "raised"})
	store, built := a.writer(r, answer)
	err = store.Raise(r.Context(), id, operatorActor(caller), in)
	switch {
	case errors.Is(err, session.ErrBadCaps):
		return httpjson.Refuse(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), "session: "))
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "the session has no turn suspended at a spend limit")
	case errors.Is(err, session.ErrCapNotLifted):
		return httpjson.Refuse(http.StatusConflict, "%s", strings.TrimPrefix(err.Error(), "session: "))
	case err != nil:
		return err
	}
	return idempotency.Send(w, built, answer, reducer.State{}, nil)
}

// setTimer moves the end of the wait of a turn suspended on a timer
// (wait_until); a turn not suspended on a timer is a 409.
func (a *answerRoutes) setTimer(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in api.TimerRequest
	if err := decode(w, r, a.maxBody, &in, true); err != nil {
		return err
	}
	at := a.sessions.Clock()
	if in.At != nil {
		at = *in.At
	}
	answer := idempotency.Always(http.StatusAccepted, api.Accepted{Status: "timer set"})
	store, built := a.writer(r, answer)
	err = store.SetTimer(r.Context(), id, operatorActor(caller), at)
	switch {
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "the session has no turn suspended on a timer")
	case err != nil:
		return err
	}
	return idempotency.Send(w, built, answer, reducer.State{}, nil)
}

// setSchedule gives the session a schedule, replacing any.
func (a *answerRoutes) setSchedule(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	var in api.ScheduleRequest
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	answer := idempotency.Always(http.StatusAccepted, api.Accepted{Status: "scheduled"})
	store, built := a.writer(r, answer)
	err = store.SetSchedule(r.Context(), id, operatorActor(caller), in.Cron, in.Text)
	switch {
	case errors.Is(err, session.ErrBadSchedule):
		return httpjson.Refuse(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), "session: "))
	case err != nil:
		return err
	}
	return idempotency.Send(w, built, answer, reducer.State{}, nil)
}

// clearSchedule removes the session's schedule; none is a 409.
func (a *answerRoutes) clearSchedule(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	answer := idempotency.Always(http.StatusAccepted, api.Accepted{Status: "cleared"})
	store, built := a.writer(r, answer)
	err = store.ClearSchedule(r.Context(), id, operatorActor(caller))
	switch {
	case errors.Is(err, session.ErrNotPending):
		return httpjson.Refuse(http.StatusConflict, "the session has no schedule")
	case err != nil:
		return err
	}
	return idempotency.Send(w, built, answer, reducer.State{}, nil)
}
