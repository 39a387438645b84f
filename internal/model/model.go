package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/baton-run/baton/pkg/conversation"
)

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"` // JSON Schema of the input object
}

// Request is one model step's input.
type Request struct {
	System    string
	Messages  []conversation.Message
	Tools     []ToolSpec
	MaxTokens int
	// Step is the number of this step in its turn, from 1; 0 when the
	// request is not a turn's step (a summariser's, for one).
	Step int
}

// EventType names a streamed event.
type EventType string

// Event types.
const (
	TextDelta      EventType = "text-delta"
	ReasoningDelta EventType = "reasoning-delta"
	// ReasoningSignature carries the signature of the reasoning so far.
	ReasoningSignature EventType = "reasoning-signature"
	ToolCall           EventType = "tool-call"
	Finish             EventType = "finish"
)

// StopReason says why the model stopped.
type StopReason string

// Stop reasons.
const (
	StopEnd       StopReason = "stop"       // a final answer
	StopToolCalls StopReason = "tool-calls" // it wants tool results
	StopLength    StopReason = "length"     // hit max tokens
	StopOther     StopReason = "other"
)

// Usage counts one step's tokens.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

// Call is a complete tool call: its input is whole JSON.
type Call struct {
	// ID is the provider's id for the call, empty if it gave none. It need
	// not be unique: the runner gives every call baton's own id.
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Event is one item of a step's stream. Only the fields its Type uses are set.
type Event struct {
	Type  EventType
	Text  string     // text-delta, reasoning-delta, reasoning-signature
	Call  Call       // tool-call
	Stop  StopReason // finish
	Usage Usage      // finish
}

// Identity names a model for traces and metrics: its provider, as the
// OpenTelemetry GenAI conventions name it (gen_ai.provider.name:
// "anthropic", "openai", "aws.bedrock"), and the model's name
// (gen_ai.request.model).
type Identity struct {
	Provider, Name string
}

// Identified is a Model that names itself; the runner asks a model for its
// identity when its agent names none.
type Identified interface {
	Identity() Identity
}

// IdentityOf is the identity m gives, zero when it gives none.
func IdentityOf(m Model) Identity {
	if id, ok := m.(Identified); ok {
		return id.Identity()
	}
	return Identity{}
}

// Model streams one step. The sequence ends after a Finish event, or with a
// non-nil error (then the step is abandoned). Implementations honour ctx.
type Model interface {
	Stream(ctx context.Context, req Request) iter.Seq2[Event, error]
}

// ErrorKind classifies a model error.
type ErrorKind string

// Error kinds. The first five are faults a retry may cure (Retryable); of
// those all but BadOutput are worth waiting for (Transient).
const (
	// Throttled: the provider rate-limits the caller (HTTP 429).
	Throttled ErrorKind = "throttled"
	// Overloaded: the provider has no capacity now (HTTP 503, 529).
	Overloaded ErrorKind = "overloaded"
	// Unavailable: the provider failed the request (HTTP 500, 502, 504, or
	// an internal error reported inside the stream).
	Unavailable ErrorKind = "unavailable"
	// Interrupted: the connection or the stream broke: refused, reset or
	// dropped, cut short mid-step, or an event that did not decode.
	Interrupted ErrorKind = "interrupted"
	// BadOutput: the model produced output that cannot be used, such as a
	// tool call whose input is not JSON. Another try may do better;
	// waiting does not help.
	BadOutput ErrorKind = "bad-output"

	ContextTooLong ErrorKind = "context-too-long"
	Auth           ErrorKind = "auth"
	InvalidRequest ErrorKind = "invalid-request"
	Other          ErrorKind = "other"
)

// Error is a classified model error.
type Error struct {
	Kind ErrorKind
	// Status is the HTTP status, when there was one.
	Status int
	// RetryAfter is the provider's hint, when it gave one.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("model: %s (HTTP %d): %v", e.Kind, e.Status, e.Err)
	}
	return fmt.Sprintf("model: %s: %v", e.Kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the step is worth trying again: nothing of the
// failed try is kept, and another may succeed.
func (e *Error) Retryable() bool { return e.Transient() || e.Kind == BadOutput }

// Transient reports whether the fault is the provider's or the network's
// and likely to pass with time, so a turn that keeps meeting it should wait
// rather than fail.
func (e *Error) Transient() bool {
	switch e.Kind {
	case Throttled, Overloaded, Unavailable, Interrupted:
		return true
	}
	return false
}

// KindOf returns the kind of a classified error, or Other.
func KindOf(err error) ErrorKind {
	var me *Error
	if errors.As(err, &me) {
		return me.Kind
	}
	return Other
}
