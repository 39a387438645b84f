package reducer

import (
	"github.com/baton-run/baton/internal/guard"
)

// Guardrails: each decision a guardrail makes on a turn's input or the
// model's output is a guardrail.decided fact. A redaction or a block of
// an input message replaces its text in the turn's Messages, so no later
// model request sees the original; an escalation asks for an approval
// bound to the decision (guard.CallID), which an operator approves or
// denies. Package guard holds the record and its rules.

// GuardDecided: a guardrail decided; Fact.Guard is the record.
const GuardDecided Type = "guardrail.decided"

func init() {
	appliers[GuardDecided] = rule(guardRules.applyDecided)
}

type guardRules struct{ *State }

// Guard returns the turn's newest decision of guardrail name at stage on
// message msg (Input) or step (Output).
func (t *Turn) Guard(name string, stage guard.Stage, msg string, step int) (guard.Record, bool) {
	for i := len(t.Guards) - 1; i >= 0; i-- {
		r := t.Guards[i]
		if r.Guardrail == name && r.Stage == stage && r.Message == msg && r.Step == step {
			return r, true
		}
	}
	return guard.Record{}, false
}

// applyDecided checks and folds a fact of type GuardDecided.
func (s guardRules) applyDecided(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	r := f.Guard
	switch {
	case s.Status != Running:
		return s.illegal(f, "only a running turn's guardrails decide")
	case r == nil || r.Guardrail == "" || (r.Stage != guard.Input && r.Stage != guard.Output):
		return s.illegal(f, "guardrail decision not named")
	case r.Decision.Check() != nil:
		return s.illegal(f, "%v", r.Decision.Check())
	case r.Action == guard.Escalate && (r.Approval == "" || r.Call == ""):
		return s.illegal(f, "an escalation names no approval")
	case r.Action != guard.Escalate && (r.Approval != "" || r.Call != "" || len(r.Held) > 0):
		return s.illegal(f, "only an escalation asks for an approval")
	case len(r.Held) > guard.MaxHeld:
		return s.illegal(f, "the held step passes %d bytes", guard.MaxHeld)
	}
	if r.Stage == guard.Input {
		m := s.Turn.message(r.Message)
		if m == nil {
			return s.illegal(f, "the turn answers no message %q, nor waits to steer it in", r.Message)
		}
		switch r.Action {
		case guard.Redact:
			m.Text = r.Text
		case guard.Block:
			m.Text = guard.Placeholder(r.Guardrail)
		}
	}
	s.Turn.Guards = append(s.Turn.Guards, *r)
	return nil
}

// Message returns the turn's message id: one it answers, or one waiting
// to be steered in.
func (t *Turn) Message(id string) (Message, bool) {
	if m := t.message(id); m != nil {
		return *m, true
	}
	return Message{}, false
}

// message is Message, for the appliers that rewrite it; nil for none.
func (t *Turn) message(id string) *Message {
	for _, ms := range [][]Message{t.Messages, t.Steer} {
		for i := range ms {
			if ms[i].ID == id {
				return &ms[i]
			}
		}
	}
	return nil
}
