package baton

import "github.com/baton-run/baton/internal/guard"

// Guardrail is a named check of a turn's input (OnInput: each message the
// turn answers) or of the model's output (OnOutput: each step's text).
// Its fields are Name (required, unique per agent and stage), Stage,
// Check (a func(ctx, GuardSubject) (GuardDecision, error)), Timeout and
// Parallel. Its Check returns Allow, Block (the turn ends; the user is shown the
// reason), Redact (the model and later requests see the replacement
// text) or Escalate (the turn waits for an operator to approve, which
// goes on, or deny, which blocks). It fails closed: a Check that errors,
// panics or outlives its Timeout (default 10s) blocks. A Parallel input
// guardrail runs while the turn's first step streams: a step it stops is
// discarded, the parts of it already streamed retracted, its usage still
// counted. Every decision is a guardrail.decided fact.
type Guardrail = guard.Guardrail

// GuardSubject is what a guardrail checks: Text, its Stage, and where it
// is: Session, Turn and Agent; Message (the message's id, at OnInput) or
// Step (the step's index in the turn, at OnOutput); Guardrail names the
// checking guardrail.
type GuardSubject = guard.Subject

// GuardDecision is a guardrail's answer: its Action ("allow", "block",
// "redact" or "escalate"), the Reason (shown to the user for a block, to
// the operator for an escalation) and, for a redaction, the replacement
// Text. Make one with Allow, Block, Redact or Escalate.
type GuardDecision = guard.Decision

// GuardStage is where a guardrail checks: OnInput or OnOutput.
type GuardStage = guard.Stage

// Guardrail stages.
const (
	OnInput  GuardStage = guard.Input
	OnOutput GuardStage = guard.Output
)

// Allow lets the checked text through.
func Allow() GuardDecision { return GuardDecision{Action: guard.Allow} }

// Block stops the turn; the user is shown reason.
func Block(reason string) GuardDecision { return GuardDecision{Action: guard.Block, Reason: reason} }

// Redact goes on with text in place of the checked text.
func Redact(text, reason string) GuardDecision {
	return GuardDecision{Action: guard.Redact, Text: text, Reason: reason}
}

// Escalate makes the turn wait for an operator, shown reason, to approve
// (go on) or deny (block).
func Escalate(reason string) GuardDecision {
	return GuardDecision{Action: guard.Escalate, Reason: reason}
}
