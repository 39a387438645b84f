package reducer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Answers that change a call: an Edit runs it with the operator's input,
// a Respond gives the model the operator's result and never runs it. The
// runner checks an edit against the tool's schema and rules again (see
// Answer.Reapprove); the stream records what ran (a data-edited part), so
// the model's next request shows the edited call.

// check reports what is wrong with an answer's decision and payload: an
// Edit carries a JSON object as Input, a Respond a JSON value as Output,
// and an approval or a denial neither.
func (a *Answer) check() error {
	switch a.Decision {
	case Approve, Deny:
		if len(a.Input) > 0 || len(a.Output) > 0 {
			return fmt.Errorf("decision %q carries no input or output", a.Decision)
		}
	case Edit:
		if len(a.Output) > 0 {
			return errors.New("an edit carries input, not output")
		}
		if !isObject(a.Input) {
			return errors.New("an edit's input must be a JSON object")
		}
	case Respond:
		if len(a.Input) > 0 {
			return errors.New("a response carries output, not input")
		}
		if len(a.Output) == 0 || !json.Valid(a.Output) {
			return errors.New("a response's output must be JSON")
		}
	default:
		return fmt.Errorf("unknown decision %q", a.Decision)
	}
	return nil
}

// Approves reports whether the answer lets the call run: an approval, or
// an edit (with its input).
func (a Answer) Approves() bool { return a.Decision == Approve || a.Decision == Edit }

// Reapprove reports whether an edit goes back to approval when the tool's
// rules send its new input there: only an operator approves, so an edit
// by another actor (an agent answering through the Go API) approves
// nothing by itself.
func (a Answer) Reapprove() bool { return a.Decision == Edit && a.ByKind != ActorOperator }

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &m) == nil && m != nil
}
