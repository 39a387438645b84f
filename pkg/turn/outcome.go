package turn

import (
	"log/slog"

	"github.com/baton-run/baton/pkg/reducer"
)

// What an invocation of a turn reports (Outcome), and the runner's log.

// Kind is how an invocation ended.
type Kind string

// Outcome kinds.
const (
	Completed  Kind = "completed"
	Suspended  Kind = "suspended"
	Failed     Kind = "failed"
	Superseded Kind = "superseded" // the turn was cancelled or taken over mid-run
	// Interrupted: a message received under the interrupt policy ended the
	// turn at a step boundary; it waits to start the next (Waiting).
	Interrupted Kind = "interrupted"
)

// Outcome reports one invocation of a turn.
type Outcome struct {
	Session string
	Turn    string
	Kind    Kind
	Cause   reducer.Cause    // when suspended
	Failure *reducer.Failure // when failed
	// Steps is the number of model steps this invocation ran.
	Steps int
	// Usage is the whole turn's, when it completed.
	Usage reducer.Usage
	// Waiting counts the messages waiting for the next turn as this
	// invocation last wrote the session: a caller may start it at once.
	Waiting int
	// Build is the build a Handed turn was handed to.
	Build string
}

// log is the runner's logger, or one that discards.
func (r *Runner) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}
