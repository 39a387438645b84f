package baton

import "github.com/baton-run/baton/internal/model"

// Model is a language model: Stream plays one step of a turn, and honours
// ctx's deadline. The events end with a Finish event, or with a non-nil
// error, which drops the step. A *ModelError says what went wrong: a
// transient kind (ModelThrottled, ModelOverloaded, ModelUnavailable,
// ModelInterrupted) is redone within the step's time by the agent's
// Limits.ModelRetry, then suspends the turn to resume after a pause (its
// RetryAfter, or the policy's wake delay); ModelBadOutput is redone at
// once; any other error fails the turn. A Model needs nothing but this
// package: see ExampleModel.
type Model = model.Model

// Request is one step's input to a Model: the system prompt, the
// conversation so far (Messages), the tools the model may call, its
// output cap and the step's number in the turn. Its methods read where
// the turn stands: LastUserText is the text of the last user message,
// Results the tool results the model has not answered yet.
type Request = model.Request

// Event is one item of a step's stream. Only the fields its Type uses are
// set: Text for TextDelta, ReasoningDelta and ReasoningSignature; Call for
// ToolCall; Stop and Usage for Finish.
type Event = model.Event

// EventType names an Event.
type EventType = model.EventType

// The events a Model streams.
const (
	TextDelta          = model.TextDelta
	ReasoningDelta     = model.ReasoningDelta
	ReasoningSignature = model.ReasoningSignature
	// ToolCall carries one whole tool call: its input is complete JSON.
	ToolCall = model.ToolCall
	// Finish ends the step with a StopReason and the step's Usage.
	Finish = model.Finish
)

// StopReason says why a step ended.
type StopReason = model.StopReason

// Stop reasons.
const (
	StopEnd       = model.StopEnd       // a final answer: the turn completes
	StopToolCalls = model.StopToolCalls // it wants tool results: another step follows
	StopLength    = model.StopLength    // it hit its output cap
	StopOther     = model.StopOther
)

// Usage counts one step's tokens.
type Usage = model.Usage

// ModelCall is a tool call as the model makes it, in a ToolCall event.
type ModelCall = model.Call

// ToolSpec describes a tool to the model: its name, description and input
// JSON Schema.
type ToolSpec = model.ToolSpec

// Script returns a deterministic Model that plays the steps of a JSON
// script, {"steps":[{"text":..., "toolCalls":[{"name":..., "input":{...}}]}]},
// one step per model call, whatever the conversation says. It is for tests
// and demos. A script with no steps, unknown fields or a call input that is
// not a JSON object is an error.
func Script(script []byte) (Model, error) {
	m, err := model.ParseScript(script)
	if err != nil {
		return nil, err
	}
	return m, nil
}
