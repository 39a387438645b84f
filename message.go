package baton

import (
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/pkg/conversation"
)

// Message is one entry of a Model's input (Request.Messages): a role and
// its content blocks. The conversation alternates user and assistant
// messages; the results of an assistant message's tool calls follow it in
// a message of RoleTool.
type Message = conversation.Message

// Content is one block of a Message. Only the fields its Type uses are
// set: Text for ContentText and ContentReasoning (with Signature, which
// a provider's reasoning may need echoed back); ToolCallID, ToolName and
// Input for ContentToolCall; ToolCallID, ToolName, Output and IsError for
// ContentToolResult. In a Request, ToolCallID is the id the model gave the
// call (ModelCall.ID) when it gave one, so a model can match results to
// its calls.
type Content = conversation.Content

// Role says who a Message is from.
type Role = conversation.Role

// Roles.
const (
	RoleUser      = conversation.User
	RoleAssistant = conversation.Assistant
	RoleTool      = conversation.ToolRole
)

// ContentType names a Content block.
type ContentType = conversation.ContentType

// Content types.
const (
	ContentText       = conversation.Text
	ContentReasoning  = conversation.Reasoning
	ContentToolCall   = conversation.ToolCall
	ContentToolResult = conversation.ToolResult
)

// ModelError is a classified model error. A Model returns one to say what
// went wrong, so the runner knows whether to retry the step, suspend the
// turn for later or fail it (see ModelErrorKind); any other error fails
// the turn.
type ModelError = model.Error

// ModelErrorKind classifies a ModelError.
type ModelErrorKind = model.ErrorKind

// The kinds of ModelError. Throttled, Overloaded, Unavailable and
// Interrupted are transient: the runner redoes the step within the agent's
// Limits.ModelRetry, then suspends the turn to try again later (Throttled
// and Overloaded honour the error's RetryAfter). BadOutput is redone at
// once, then fails the turn. The rest fail the turn, with a message saying
// what to check.
const (
	ModelThrottled      = model.Throttled      // the provider rate-limits the caller (HTTP 429)
	ModelOverloaded     = model.Overloaded     // the provider has no capacity now (HTTP 503, 529)
	ModelUnavailable    = model.Unavailable    // the provider failed the request (HTTP 500, 502, 504)
	ModelInterrupted    = model.Interrupted    // the connection or stream broke
	ModelBadOutput      = model.BadOutput      // output that cannot be used, such as a call input that is not JSON
	ModelContextTooLong = model.ContextTooLong // the conversation does not fit the context window
	ModelAuth           = model.Auth           // the credentials were refused
	ModelInvalidRequest = model.InvalidRequest // the provider rejected the request
	ModelOther          = model.Other
)

// ModelErrorKindOf returns the kind of the first ModelError in err's
// chain, or ModelOther.
func ModelErrorKindOf(err error) ModelErrorKind { return model.KindOf(err) }
