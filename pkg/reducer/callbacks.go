package reducer

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/baton-run/baton/internal/callback"
)

// Callbacks: a side-effecting tool call that completes by callback hands
// out a token (callback.opened, recorded before the tool gets it), the
// turn suspends for CauseCallback, and the token's holder ends it once
// (callback.ended: a result, a failure, or the turn's timeout), which is
// the call's result. Package callback holds the record and its rules.

// The facts of callbacks; Fact.Callback carries the record.
const (
	// CallbackOpened: the running turn handed out a token for the
	// newest execution of a tool call. Fact.Callback names the call, the
	// attempt, the token's hash and the policy; Opened is the fact's time.
	CallbackOpened Type = "callback.opened"
	// CallbackBeat: the token's holder sent a heartbeat (Fact.Callback
	// names the hash); the heartbeat timeout counts from the fact's time.
	CallbackBeat Type = "callback.heartbeat"
	// CallbackEnded: the callback's end, recorded once: a completion or
	// failure by the token's holder (or an operator) before the
	// deadline, or the turn's own timeout after it.
	CallbackEnded Type = "callback.ended"
)

// CauseCallback: the turn waits for callbacks its tool calls handed out;
// the last one's end, or the first deadline, resumes it.
const CauseCallback Cause = "callback"

// ReasonCallback: suspended for callbacks, the earliest deadline Due.
const ReasonCallback Reason = "callback"

func init() {
	appliers[CallbackOpened] = rule(callbackRules.applyOpened)
	appliers[CallbackBeat] = rule(callbackRules.applyBeat)
	appliers[CallbackEnded] = rule(callbackRules.applyEnded)
}

type callbackRules struct{ *State }

// Callback returns the turn's callback of a tool call, the newest.
func (t *Turn) Callback(toolCallID string) (callback.Callback, bool) {
	for i := len(t.Callbacks) - 1; i >= 0; i-- {
		if t.Callbacks[i].ToolCallID == toolCallID {
			return t.Callbacks[i], true
		}
	}
	return callback.Callback{}, false
}

// callbackOf returns the index of the turn's callback whose token hashes
// to hash, -1 for none.
func (t *Turn) callbackOf(hash string) int {
	return slices.IndexFunc(t.Callbacks, func(c callback.Callback) bool { return callback.Same(c.Hash, hash) })
}

// CallbackByHash returns the turn's callback whose token hashes to hash.
func (t *Turn) CallbackByHash(hash string) (callback.Callback, bool) {
	if i := t.callbackOf(hash); i >= 0 {
		return t.Callbacks[i], true
	}
	return callback.Callback{}, false
}

// Awaiting returns the turn's callbacks still open and the earliest of
// their deadlines.
func (t *Turn) Awaiting() (n int, first time.Time) {
	for _, c := range t.Callbacks {
		if c.Ended() {
			continue
		}
		n++
		if d := c.Deadline(); first.IsZero() || d.Before(first) {
			first = d
		}
	}
	return n, first
}

// applyOpened checks and folds a fact of type CallbackOpened.
func (s callbackRules) applyOpened(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	c := f.Callback
	switch {
	case s.Status != Running:
		return s.illegal(f, "only a running turn hands out callbacks")
	case c == nil || c.ToolCallID == "" || len(c.Hash) != 64 || c.Ended() || c.Attempt < 1:
		return s.illegal(f, "callback not named, or named as ended")
	case c.Policy.Check() != nil:
		return s.illegal(f, "%v", c.Policy.Check())
	}
	ex, ok := s.Turn.Execution(c.ToolCallID)
	if !ok || ex.Try() != c.Attempt {
		return s.illegal(f, "tool call %s has no execution at attempt %d", c.ToolCallID, c.Attempt)
	}
	if old, ok := s.Turn.Callback(c.ToolCallID); ok && old.Attempt == c.Attempt {
		return s.illegal(f, "tool call %s already handed out a callback at attempt %d", c.ToolCallID, c.Attempt)
	}
	if s.Turn.callbackOf(c.Hash) >= 0 {
		return s.illegal(f, "a callback's token hash is used twice")
	}
	rec := *c
	rec.Opened, rec.Beat, rec.By, rec.Output, rec.Error = f.Time, time.Time{}, "", nil, ""
	s.Turn.Callbacks = append(s.Turn.Callbacks, rec)
	return nil
}

// open finds the open callback a heartbeat or an end names: its turn
// must be the open one, and it must not have ended.
func (s callbackRules) open(f Fact) (int, error) {
	if f.Callback == nil || f.Callback.Hash == "" {
		return -1, s.illegal(f, "no callback named")
	}
	if s.Turn == nil || (f.Turn != "" && f.Turn != s.Turn.ID) {
		return -1, s.refuse(f, callback.ErrExpired, "the turn the callback was for ended")
	}
	i := s.Turn.callbackOf(f.Callback.Hash)
	switch {
	case i < 0:
		return -1, s.refuse(f, callback.ErrUnknown, "no callback of the turn has this token")
	case s.Turn.Callbacks[i].Status == callback.TimedOut:
		return -1, s.refuse(f, callback.ErrExpired, "the callback of tool call %s timed out", s.Turn.Callbacks[i].ToolCallID)
	case s.Turn.Callbacks[i].Ended():
		return -1, s.refuse(f, callback.ErrDone, "the callback of tool call %s already ended (%s)", s.Turn.Callbacks[i].ToolCallID, s.Turn.Callbacks[i].Status)
	}
	return i, nil
}

// applyBeat checks and folds a fact of type CallbackBeat.
func (s callbackRules) applyBeat(f Fact) error {
	i, err := s.open(f)
	if err != nil {
		return err
	}
	c := &s.Turn.Callbacks[i]
	if f.Time.After(c.Deadline()) {
		return s.refuse(f, callback.ErrExpired, "the callback of tool call %s timed out at %s", c.ToolCallID, c.Deadline().Format(time.RFC3339))
	}
	c.Beat = f.Time
	return nil
}

// applyEnded checks and folds a fact of type CallbackEnded.
func (s callbackRules) applyEnded(f Fact) error {
	i, err := s.open(f)
	if err != nil {
		return err
	}
	c, e := &s.Turn.Callbacks[i], f.Callback
	switch e.Status {
	case callback.Completed, callback.Failed:
		if r := (callback.Result{Output: e.Output, Error: e.Error}); r.Check() != nil || r.Status() != e.Status {
			return s.refuse(f, callback.ErrBadResult, "a %s end needs exactly its output or its error", e.Status)
		}
		if f.Time.After(c.Deadline()) {
			return s.refuse(f, callback.ErrExpired, "the callback of tool call %s timed out at %s", c.ToolCallID, c.Deadline().Format(time.RFC3339))
		}
	case callback.TimedOut:
		if f.Time.Add(WakeSkew).Before(c.Deadline()) {
			return s.illegal(f, "the callback of tool call %s times out at %s, not before", c.ToolCallID, c.Deadline().Format(time.RFC3339))
		}
	default:
		return s.illegal(f, "callback end status %q", e.Status)
	}
	c.Status, c.Output, c.Error = e.Status, slices.Clone(json.RawMessage(e.Output)), e.Error
	c.By = string(f.Actor.Kind)
	if f.Actor.Kind == ActorOperator {
		c.By += ":" + f.Actor.ID
	}
	return nil
}

// suspendForCallbacks checks a suspension for callbacks: some are open.
func (s callbackRules) suspendForCallbacks(f Fact) error {
	if len(s.Turn.Callbacks) == 0 {
		return s.illegal(f, "suspended for callbacks with none handed out")
	}
	s.Turn.Faults = 0
	return nil
}
