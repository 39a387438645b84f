// Package guard checks a turn's input and the model's output before harm:
// a Guardrail is a named check at one Stage that decides allow, block
// (with a reason the user is shown), redact (with replacement text) or
// escalate (an operator decides). Run fails closed: a check that errors,
// panics or times out blocks. It holds the domain types, the decision
// record package reducer folds, and the checks an agent file declares
// (patterns, a maximum length, an HTTP or Lambda checker); the runner
// acts on them.
package guard
