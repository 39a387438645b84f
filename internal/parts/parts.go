package parts

import "encoding/json"

// Type names a stream part. The names and fields are those of the
// Vercel AI SDK UI message stream protocol, so a chat front end built on it
// can render a baton turn. baton's own markers use the protocol's data-*
// parts.
//
// How a turn maps onto the protocol:
//
//	turn begins                 start{messageId: turn id}
//	model step begins           start-step
//	reasoning                   reasoning-start, reasoning-delta…, reasoning-end
//	text                        text-start, text-delta…, text-end
//	tool call (complete input)  tool-input-available{toolCallId, toolName, input, providerMetadata}
//	step usage and times        message-metadata{messageMetadata: {usage, turnUsage, finishReason, startedAt, finishedAt, toolsStartedAt, toolsFinishedAt, checkpointAt}}
//	model step ends             finish-step
//	tool needs approval         tool-approval-request{approvalId, toolCallId}
//	operator answered           tool-approval-response{approvalId, approved, reason}
//	tool result                 tool-output-available{toolCallId, output}
//	tool failed                 tool-output-error{toolCallId, errorText}
//	tool denied                 tool-output-denied{toolCallId}
//	invocation suspends         data-suspended{data: {cause}}
//	invocation resumes          data-resumed{data: {invocation}}
//	partial step dropped        data-abandoned{data: {reason}}
//	messages steered into turn  data-steered{data: {messages: [{id, text}]}}
//	turn fails                  error{errorText}
//	turn ends                   finish{finishReason}
//
// A toolCallId is always baton's id for the call (tc_<turn>_<step>_<call>),
// unique in the session; approvals, results and executions name the call by
// it. The id the provider gave the call, if any, is kept in the
// tool-input-available part's providerMetadata as
// {"baton":{"providerCallId": …}}, to be echoed to the provider.
//
// A model step's parts lie between start-step and finish-step; the results
// of its tool calls follow its finish-step, so a step whose model output is
// durable is never re-asked of the model even when its tools wait for an
// operator.
type Type string

// Part types.
const (
	Start                Type = "start"
	StartStep            Type = "start-step"
	ReasoningStart       Type = "reasoning-start"
	ReasoningDelta       Type = "reasoning-delta"
	ReasoningEnd         Type = "reasoning-end"
	TextStart            Type = "text-start"
	TextDelta            Type = "text-delta"
	TextEnd              Type = "text-end"
	ToolInputAvailable   Type = "tool-input-available"
	ToolApprovalRequest  Type = "tool-approval-request"
	ToolApprovalResponse Type = "tool-approval-response"
	ToolOutputAvailable  Type = "tool-output-available"
	ToolOutputError      Type = "tool-output-error"
	ToolOutputDenied     Type = "tool-output-denied"
	MessageMetadata      Type = "message-metadata"
	FinishStep           Type = "finish-step"
	Finish               Type = "finish"
	Error                Type = "error"
	DataSuspended        Type = "data-suspended"
	DataResumed          Type = "data-resumed"
	DataAbandoned        Type = "data-abandoned"
	// DataCompacted marks where the turn compacted the session's context;
	// its data is the reducer.Compaction recorded.
	DataCompacted Type = "data-compacted"
	// DataSteered carries user messages delivered into the running turn
	// at a step boundary (the steer policy); the model sees them as a user
	// message after the step before them.
	DataSteered Type = "data-steered"
	// DataEdited records that an operator's answer edited a tool call's
	// input before it ran; the model sees the call with the new input.
	DataEdited Type = "data-edited"
	// DataRedone marks that the calls it names (data.toolCallIds) were
	// running when an invocation ended: the data parts they emitted came
	// from a run whose result was lost; a call run again emits anew.
	DataRedone Type = "data-redone"
	// DataGuardrail shows a guardrail's decision (block, redact,
	// escalate) to the user; one marked discarded retracts the open step
	// (the parts of it already streamed live), which no later model
	// request sees (see conversation.GuardrailData).
	DataGuardrail Type = "data-guardrail"
)

// Part is one protocol part. Only the fields its Type uses are set.
type Part struct {
	Type Type `json:"type"`

	MessageID string `json:"messageId,omitempty"` // start
	// ID names a text or reasoning block.
	ID    string `json:"id,omitempty"`
	Delta string `json:"delta,omitempty"`

	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`

	ApprovalID string `json:"approvalId,omitempty"`
	Approved   *bool  `json:"approved,omitempty"`
	Reason     string `json:"reason,omitempty"`

	FinishReason    string          `json:"finishReason,omitempty"`
	MessageMetadata json.RawMessage `json:"messageMetadata,omitempty"`
	// ProviderMetadata carries what a provider needs echoed back, such as a
	// reasoning signature or the provider's id for a tool call.
	ProviderMetadata json.RawMessage `json:"providerMetadata,omitempty"`
	// Data is the payload of data-* parts.
	Data json.RawMessage `json:"data,omitempty"`
	// Transient marks a data part a tool emitted for live readers only:
	// the AI SDK passes it to onData, not message.parts, and the chat's
	// history leaves it out.
	Transient bool `json:"transient,omitempty"`
}

// IsData reports whether t is a data part's type: "data-" and a name.
func (t Type) IsData() bool { return len(t) > len("data-") && t[:len("data-")] == "data-" }

// ToolData reports whether p is a data part a running tool emitted: one
// that names its call.
func (p Part) ToolData() bool { return p.ToolCallID != "" && p.Type.IsData() }

// Marker reports whether p only marks suspension, resumption, an
// abandoned step or redone calls, and carries none of the turn's content.
func (p Part) Marker() bool {
	return p.Type == DataSuspended || p.Type == DataResumed || p.Type == DataAbandoned || p.Type == DataRedone
}

// Recorded returns the bytes a JSON value is stored as when a Part carrying
// it (as Input, Output, Data or metadata) is written: what encoding/json
// writes for a json.RawMessage, compacted with <, >, & and U+2028/U+2029
// escaped. Whatever reads a part back from a stream gets these bytes, so
// code that folds the parts it writes into model input folds Recorded
// bytes, to see a part live as every later reader sees it. Recorded is
// idempotent; a value that is not valid JSON (which no part can be stored
// with) is returned as is.
func Recorded(v json.RawMessage) json.RawMessage {
	if !respelled(v) {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	return b
}

// respelled reports whether encoding/json may write v differently: v holds
// whitespace, <, >, & or the first byte of U+2028 or U+2029. Without them,
// valid JSON is written as is.
func respelled(v []byte) bool {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xe2:
			return true
		}
	}
	return false
}
