package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Kind names what diverged.
type Kind string

// The kinds of divergence.
const (
	// AgentGone: the recorded session's agent is not defined any more.
	AgentGone Kind = "agent-gone"
	// ToolGone: the agent no longer has a tool the recording called.
	ToolGone Kind = "tool-gone"
	// ToolRefused: the tool's schema now refuses a recorded call's input
	// (or now accepts input it refused).
	ToolRefused Kind = "tool-refused"
	// RuleChanged: an approval rule now decides otherwise: the call would
	// now wait for an operator, or no longer would.
	RuleChanged Kind = "rule-changed"
	// ClaimChanged: a call now claims other resources than it did.
	ClaimChanged Kind = "claim-changed"
	// StepsChanged: the turn now takes another number of model steps.
	StepsChanged Kind = "steps-changed"
	// ResultChanged: a tool call's result differs (a read tool run again,
	// or a call that now ends otherwise).
	ResultChanged Kind = "result-changed"
	// AnswerChanged: the turn's final answer differs.
	AnswerChanged Kind = "answer-changed"
	// OutcomeChanged: the turn now ends otherwise (completed, failed,
	// suspended...).
	OutcomeChanged Kind = "outcome-changed"
)

// Divergence is one difference between the recording and the replay.
type Divergence struct {
	// Turn numbers the session's turns from 1 (0 for the session as a
	// whole); Step the turn's model steps from 1, 0 when the divergence is
	// the turn's as a whole.
	Turn int  `json:"turn"`
	Step int  `json:"step,omitempty"`
	Kind Kind `json:"kind"`
	// Call is the recorded tool call's id and Tool its tool, when the
	// divergence is a call's.
	Call string `json:"call,omitempty"`
	Tool string `json:"tool,omitempty"`
	// Detail says what differs, recorded first, then now.
	Detail string `json:"detail"`
}

// String is the divergence on one line.
func (d Divergence) String() string {
	var b strings.Builder
	if d.Turn > 0 {
		fmt.Fprintf(&b, "turn %d", d.Turn)
		if d.Step > 0 {
			fmt.Fprintf(&b, " step %d", d.Step)
		}
		b.WriteString(": ")
	}
	b.WriteString(string(d.Kind))
	if d.Tool != "" {
		fmt.Fprintf(&b, " (%s", d.Tool)
		if d.Call != "" {
			fmt.Fprintf(&b, ", call %s", d.Call)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ": %s", d.Detail)
	return b.String()
}

// Turn is what one recorded turn was, and what it is now.
type Turn struct {
	// Number counts the session's turns from 1; ID is the recorded turn's.
	Number int    `json:"number"`
	ID     string `json:"id"`
	// Recorded and Replayed are how the turn ended (completed, failed,
	// cancelled, interrupted, or open when the recording or the replay
	// left it waiting), and their counts of model steps.
	Recorded      string `json:"recorded"`
	Replayed      string `json:"replayed"`
	RecordedSteps int    `json:"recordedSteps"`
	ReplayedSteps int    `json:"replayedSteps"`
	// Changed is set when the agent's fingerprint differs from the one the
	// recorded turn started on: its definition changed, whether or not
	// the turn diverged.
	Changed bool `json:"changed,omitempty"`
}

// Report is what a replay found.
type Report struct {
	Session string `json:"session"`
	Agent   string `json:"agent"`
	Turns   []Turn `json:"turns"`
	// Divergences lists every difference found, in turn and step order
	// (never null).
	Divergences []Divergence `json:"divergences"`
	// Accepted are the divergences the caller accepted (see Accept),
	// which Failed does not count.
	Accepted []Divergence `json:"accepted,omitempty"`
	// Notes say what the replay could not check, such as a step of a
	// remote tool's.
	Notes []string `json:"notes,omitempty"`
}

// Failed reports whether the replay diverged in a way not accepted.
func (r Report) Failed() bool { return len(r.Divergences) > 0 }

// Kinds lists the kinds of r's divergences, each once, in order.
func (r Report) Kinds() []Kind {
	var out []Kind
	for _, d := range r.Divergences {
		if !slices.Contains(out, d.Kind) {
			out = append(out, d.Kind)
		}
	}
	return out
}

// Accept moves the divergences ok accepts from Divergences to Accepted.
func (r *Report) Accept(ok func(Divergence) bool) {
	kept := r.Divergences[:0:0]
	for _, d := range r.Divergences {
		if ok(d) {
			r.Accepted = append(r.Accepted, d)
		} else {
			kept = append(kept, d)
		}
	}
	r.Divergences = kept
}

// Kinds returns an acceptance of every divergence of the given kinds, for
// Accept.
func Kinds(kinds ...Kind) func(Divergence) bool {
	return func(d Divergence) bool { return slices.Contains(kinds, d.Kind) }
}

// Write prints r for a person: each turn with its ending and steps,
// recorded and replayed, then each divergence, and a last line saying
// whether it diverged.
func (r Report) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "replay of session %s (agent %s): %d turn(s)\n", r.Session, r.Agent, len(r.Turns))
	for _, t := range r.Turns {
		fmt.Fprintf(&b, "  turn %d %s: recorded %s in %d step(s), replayed %s in %d step(s)", t.Number, t.ID, t.Recorded, t.RecordedSteps, t.Replayed, t.ReplayedSteps)
		if t.Changed {
			b.WriteString(" (the agent changed since)")
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, d := range r.Accepted {
		fmt.Fprintf(&b, "accepted: %s\n", d)
	}
	for _, d := range r.Divergences {
		fmt.Fprintf(&b, "diverged: %s\n", d)
	}
	if r.Failed() {
		fmt.Fprintf(&b, "%d divergence(s)\n", len(r.Divergences))
	} else {
		b.WriteString("no divergence\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String is Write's text.
func (r Report) String() string {
	var b strings.Builder
	_ = r.Write(&b)
	return b.String()
}
