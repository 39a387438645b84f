package reducer

import (
	"slices"
	"strconv"
)

// Rewinds and forks: a session.rewound fact takes the session's
// conversation back to a point (a turn's end, a step within a turn, or
// just before a turn), naming a snapshot of the conversation there, which
// later loads rebuild from. The facts and streams after the point stay
// for audit. A fork is a new session whose first facts are
// session.created and session.rewound (Rewind.From names the original).

// SessionRewound: an operator took the session back to Fact.Rewind's
// point; Fact.Snapshot names the conversation and state there.
const SessionRewound Type = "session.rewound"

// Point is where a rewind or fork goes back to. Exactly one form:
//   - Turn alone: just after turn Turn ended;
//   - Turn and Step: within turn Turn, after its first Step steps; the
//     turn's messages are answered again from there (Step 0 runs the
//     whole turn again: a regenerate);
//   - Before: just before turn Before started, its messages dropped.
type Point struct {
	Turn   string `json:"turn,omitempty"`
	Step   *int   `json:"step,omitempty"`
	Before string `json:"before,omitempty"`
}

// Check reports whether p has exactly one of the three forms.
func (p Point) Check() error {
	switch {
	case p.Turn == "" && p.Before == "":
		return pointError("name a turn (turn, with or without step) or before")
	case p.Turn != "" && p.Before != "":
		return pointError("turn and before name two points; give one")
	case p.Before != "" && p.Step != nil:
		return pointError("step goes with turn, not before")
	case p.Step != nil && *p.Step < 0:
		return pointError("step " + strconv.Itoa(*p.Step) + " is negative")
	}
	return nil
}

// String names the point for people.
func (p Point) String() string {
	switch {
	case p.Before != "":
		return "before turn " + p.Before
	case p.Step != nil:
		return "turn " + p.Turn + " after step " + strconv.Itoa(*p.Step)
	}
	return "the end of turn " + p.Turn
}

// PointError is a point that names no place the session can go back to.
type PointError struct{ Reason string }

func (e *PointError) Error() string { return "bad point: " + e.Reason }

func pointError(reason string) error { return &PointError{Reason: reason} }

// Rewind is what a session.rewound fact records.
type Rewind struct {
	Point Point `json:"point"`
	// From, in a fork, is the session it was forked from; empty for a
	// rewind within the session.
	From string `json:"from,omitempty"`
	// Seq is the last fact of the session the point was taken from that
	// the point keeps (for a point within a turn, the turn's start: its
	// steps are in the stream).
	Seq int64 `json:"seq"`
	// Inbox are the messages the session answers next: the turn's own
	// at step 0, none otherwise.
	Inbox []Message `json:"inbox,omitempty"`
	// Turn is the turn reopened at a step point after step 1 or later:
	// a new turn with the first steps in its stream, suspended for its
	// budget so that the next wake runs the next step.
	Turn *Turn `json:"turn,omitempty"`
	// Compactions is the number of compactions the conversation at the
	// point had been through.
	Compactions int `json:"compactions,omitempty"`
	// Effects are the side-effect executions after the point: going back
	// does not undo them.
	Effects []Effect `json:"effects,omitempty"`
}

// Effect is a side-effect execution after a rewind's point.
type Effect struct {
	Turn       string `json:"turn"`
	Execution  string `json:"execution"`
	ToolCallID string `json:"toolCallId"`
	Tool       string `json:"tool"`
	// Completed is set when the tool returned a result; otherwise it
	// failed, was abandoned or never finished, and may or may not have
	// done what it does.
	Completed bool `json:"completed"`
}

func init() { appliers[SessionRewound] = rule(sessionRules.applySessionRewound) }

// applySessionRewound checks and folds a fact of type SessionRewound.
func (s sessionRules) applySessionRewound(f Fact) error {
	r := f.Rewind
	switch {
	case r == nil || f.Snapshot == "":
		return s.illegal(f, "no rewind or no snapshot")
	case s.Turn != nil:
		return s.illegal(f, "a turn is open")
	case r.Point.Check() != nil:
		return s.illegal(f, "%v", r.Point.Check())
	case r.Turn != nil && len(r.Inbox) > 0:
		return s.illegal(f, "a reopened turn and an inbox")
	case r.Compactions < 0:
		return s.illegal(f, "negative compactions")
	}
	s.Inbox = slices.Clone(r.Inbox)
	if t := r.Turn; t != nil {
		if t.ID == "" || t.Stream == "" || len(t.Messages) == 0 {
			return s.illegal(f, "the reopened turn needs an id, a stream and messages")
		}
		c := (&State{Turn: t}).clone()
		s.Turn = c.Turn
		s.Turn.Started, s.Turn.Since, s.Turn.Lease, s.Turn.Cause = f.Time, f.Time, f.Lease, CauseBudget
		s.Turn.Invocations = max(s.Turn.Invocations, 1)
		s.Status = Suspended
	}
	s.Compactions = r.Compactions
	s.Snapshot, s.SnapshotSeq = f.Snapshot, f.Seq
	if r.From != "" {
		s.From = r.From
	}
	s.Rewinds++
	return nil
}
