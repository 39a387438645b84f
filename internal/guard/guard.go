package guard

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Stage is where a guardrail checks.
type Stage string

// Stages.
const (
	// Input checks each message a turn answers, before the model sees it
	// (or, for a Parallel guardrail, while the turn's first step runs).
	Input Stage = "input"
	// Output checks the text of each model step before it is kept.
	Output Stage = "output"
)

// Action is what a guardrail decided.
type Action string

// Actions.
const (
	Allow    Action = "allow"    // nothing to do
	Block    Action = "block"    // stop: the turn ends, the user is shown Reason
	Redact   Action = "redact"   // go on with Text in place of the checked text
	Escalate Action = "escalate" // an operator approves (allow) or denies (block)
)

// Decision is a guardrail's answer.
type Decision struct {
	Action Action `json:"action"`
	// Reason is why, shown to the user for a block and to the operator for
	// an escalation.
	Reason string `json:"reason,omitempty"`
	// Text replaces the checked text, for Redact.
	Text string `json:"text,omitempty"`
}

// Check says what is wrong with d, nil when nothing is.
func (d Decision) Check() error {
	switch d.Action {
	case Allow, Block, Escalate:
	case Redact:
		if d.Text == "" {
			return errors.New("a redact decision needs its replacement text")
		}
	default:
		return fmt.Errorf("action %q: want allow, block, redact or escalate", d.Action)
	}
	return nil
}

// Subject is what a guardrail checks: text a turn answers or the model
// wrote, and where it is.
type Subject struct {
	// Guardrail is the checking guardrail's name (set by Run).
	Guardrail            string
	Session, Turn, Agent string
	Stage                Stage
	Text                 string
	// Message is the id of the checked message (Input).
	Message string
	// Step is the index of the checked step in its turn (Output).
	Step int
}

// Func is a guardrail's check.
type Func func(ctx context.Context, s Subject) (Decision, error)

// DefaultTimeout bounds a check whose Guardrail sets no Timeout.
const DefaultTimeout = 10 * time.Second

// Guardrail is a named check at one stage.
type Guardrail struct {
	// Name names the guardrail in its decisions. Required, unique per
	// agent and stage.
	Name  string
	Stage Stage
	Check Func
	// Timeout bounds each check; zero means DefaultTimeout. A check that
	// runs past it blocks.
	Timeout time.Duration
	// Parallel runs an Input guardrail while the turn's first step
	// streams, as the OpenAI Agents SDK does: a step it blocks, redacts or
	// escalates is discarded (its billed usage still counted) and none of
	// it reaches a later model request.
	Parallel bool
}

// Validate says what is wrong with g, nil when nothing is.
func (g Guardrail) Validate() error {
	switch {
	case g.Name == "":
		return errors.New("guardrail has no name")
	case g.Stage != Input && g.Stage != Output:
		return fmt.Errorf("guardrail %q: stage %q: want input or output", g.Name, g.Stage)
	case g.Check == nil:
		return fmt.Errorf("guardrail %q: no check", g.Name)
	case g.Timeout < 0:
		return fmt.Errorf("guardrail %q: negative timeout", g.Name)
	case g.Parallel && g.Stage != Input:
		return fmt.Errorf("guardrail %q: only an input guardrail runs in parallel", g.Name)
	}
	return nil
}

// Validate checks a list of guardrails: each valid, no name twice at a
// stage.
func Validate(gs []Guardrail) error {
	seen := map[string]bool{}
	for _, g := range gs {
		if err := g.Validate(); err != nil {
			return err
		}
		k := string(g.Stage) + "/" + g.Name
		if seen[k] {
			return fmt.Errorf("guardrail %q: named twice at stage %s", g.Name, g.Stage)
		}
		seen[k] = true
	}
	return nil
}

// FailedReason is the reason a user is shown when a guardrail could not
// decide (it errored, panicked or timed out) and so blocked.
const FailedReason = "a safety check could not be completed"

// Run runs g's check on s under its timeout. It fails closed: an error, a
// panic, a timeout or an invalid decision is a Block with FailedReason,
// and err says what went wrong (for the record, not the user).
func Run(ctx context.Context, g Guardrail, s Subject) (d Decision, err error) {
	timeout := g.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.Guardrail, s.Stage = g.Name, g.Stage
	type result struct {
		d   Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("panicked: %v", p)}
			}
		}()
		d, err := g.Check(ctx, s)
		if err == nil {
			err = d.Check()
		}
		done <- result{d, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		r.err = fmt.Errorf("no decision within %s: %w", timeout, ctx.Err())
	}
	if r.err != nil {
		return Decision{Action: Block, Reason: FailedReason}, fmt.Errorf("guardrail %s: %w", g.Name, r.err)
	}
	return r.d, nil
}
