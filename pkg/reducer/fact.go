package reducer

import (
	"encoding/json"
	"time"
)

// Type names a session fact.
type Type string

// The lifecycle facts. Facts record what happened to a session; what a turn
// said and did lives in its stream.
const (
	SessionCreated    Type = "session.created"
	MessageReceived   Type = "message.received"
	TurnStarted       Type = "turn.started"
	TurnSuspended     Type = "turn.suspended"
	TurnResumed       Type = "turn.resumed"
	ApprovalRequested Type = "approval.requested"
	ApprovalAnswered  Type = "approval.answered"
	ExecutionStarted  Type = "execution.started"
	ExecutionVerdict  Type = "execution.verdict"
	TurnCompleted     Type = "turn.completed"
	TurnFailed        Type = "turn.failed"
	TurnCancelled     Type = "turn.cancelled"
)

// ActorKind says who caused a fact.
type ActorKind string

// Actor kinds.
const (
	ActorAgent    ActorKind = "agent"    // a turn's runner; ID is the turn
	ActorOperator ActorKind = "operator" // a person or API caller; ID is their identity
	ActorSystem   ActorKind = "system"   // the tick: reaper, expiry
)

// Actor is who caused a fact.
type Actor struct {
	Kind ActorKind `json:"kind"`
	ID   string    `json:"id"`
}

// Cause is why a turn is suspended.
type Cause string

// Suspension causes.
const (
	CauseBudget    Cause = "budget"    // the invocation ran out of time or steps
	CauseApproval  Cause = "approval"  // a tool call waits for an operator
	CauseThrottled Cause = "throttled" // the model or the store stayed throttled or failing; retry later
	CauseUncertain Cause = "uncertain" // a side effect may or may not have happened
	CauseLease     Cause = "lease"     // the invocation died; the reaper found it

	// CauseModelUnavailable: the model stayed unavailable (5xx, overloaded,
	// a broken connection or stream); retry later.
	CauseModelUnavailable Cause = "model-unavailable"
	// CauseToolsUnavailable: the agent's remote tools (its MCP servers)
	// could not be listed as the turn started; retry later.
	CauseToolsUnavailable Cause = "tools-unavailable"
)

// Fault reports whether the cause is a fault that a later wake retries:
// throttled, model-unavailable or tools-unavailable.
func (c Cause) Fault() bool {
	return c == CauseThrottled || c == CauseModelUnavailable || c == CauseToolsUnavailable
}

// Known reports whether c is one of the suspension causes above.
func (c Cause) Known() bool {
	switch c {
	case CauseBudget, CauseApproval, CauseThrottled, CauseModelUnavailable, CauseUncertain, CauseLease:
		return true
	}
	return false
}

// Decision answers an approval request.
type Decision string

// Decisions.
const (
	Approve Decision = "approve"
	Deny    Decision = "deny"
)

// Verdict settles an uncertain execution.
type Verdict string

// Verdicts.
const (
	Rerun   Verdict = "rerun"
	Abandon Verdict = "abandon"
)

// FailureKind classifies a failed turn.
type FailureKind string

// Failure kinds.
const (
	FailModel    FailureKind = "model"
	FailTool     FailureKind = "tool"
	FailStore    FailureKind = "store"
	FailLimit    FailureKind = "limit"
	FailInternal FailureKind = "internal"
)

// Message is a user message received by a session.
type Message struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Approval is a tool call waiting for an operator's decision.
type Approval struct {
	ID         string          `json:"id"`
	ToolCallID string          `json:"toolCallId"`
	Tool       string          `json:"tool"`
	Input      json.RawMessage `json:"input"`
	Expires    time.Time       `json:"expires"`
}

// Answer is an operator's decision on one approval.
type Answer struct {
	ApprovalID string   `json:"approvalId"`
	ToolCallID string   `json:"toolCallId"`
	Decision   Decision `json:"decision"`
	Reason     string   `json:"reason,omitempty"`
}

// Execution is a side-effecting tool call made durable before it runs.
type Execution struct {
	ID         string `json:"id"` // also the idempotency key
	ToolCallID string `json:"toolCallId"`
	Tool       string `json:"tool"`
	Idempotent bool   `json:"idempotent"`
}

// Settled is an operator's verdict on an uncertain execution.
type Settled struct {
	ExecutionID string  `json:"executionId"`
	ToolCallID  string  `json:"toolCallId"`
	Verdict     Verdict `json:"verdict"`
}

// Usage counts model tokens and steps.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	Steps        int64 `json:"steps"`
}

// Add returns u plus o.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.InputTokens + o.InputTokens, u.OutputTokens + o.OutputTokens, u.Steps + o.Steps}
}

// sub returns u minus o.
func (u Usage) sub(o Usage) Usage {
	return Usage{u.InputTokens - o.InputTokens, u.OutputTokens - o.OutputTokens, u.Steps - o.Steps}
}

// Failure says why a turn failed.
type Failure struct {
	Kind  FailureKind `json:"kind"`
	Error string      `json:"error"`
}

// Fact is one entry of a session's append-only log. Seq is dense from 1.
// Which payload fields are set depends on Type.
type Fact struct {
	Seq   int64     `json:"seq"`
	Type  Type      `json:"type"`
	Actor Actor     `json:"actor"`
	Time  time.Time `json:"time"`

	// session.created
	Agent string `json:"agent,omitempty"`
	Owner string `json:"owner,omitempty"`
	// message.received
	Message *Message `json:"message,omitempty"`
	// turn.* facts name their turn; turn.started also its stream.
	Turn   string `json:"turn,omitempty"`
	Stream string `json:"stream,omitempty"`
	// turn.started and turn.resumed: when the invocation's lease runs out.
	Lease time.Time `json:"lease,omitzero"`
	// turn.suspended
	Cause Cause `json:"cause,omitempty"`
	// turn.suspended for a model fault (Cause.Fault): how many such
	// suspensions in a row, with no step completed between them, this one
	// included; and when its delayed wake is due.
	Faults int       `json:"faults,omitempty"`
	Wake   time.Time `json:"wake,omitzero"`
	// approval.requested
	Approval *Approval `json:"approval,omitempty"`
	// approval.answered
	Answer *Answer `json:"answer,omitempty"`
	// execution.started
	Execution *Execution `json:"execution,omitempty"`
	// execution.verdict
	Settled *Settled `json:"settled,omitempty"`
	// turn.completed, turn.failed, turn.cancelled: usage of the turn, and
	// the key of the conversation snapshot taken as it ended. A
	// turn.suspended may carry the turn's usage so far.
	Usage    *Usage   `json:"usage,omitempty"`
	Failure  *Failure `json:"failure,omitempty"`
	Snapshot string   `json:"snapshot,omitempty"`
	// turn.cancelled and approval.answered may carry an operator's reason.
	Reason string `json:"reason,omitempty"`
}

// Ends reports whether the fact ends a turn.
func (f Fact) Ends() bool {
	return f.Type == TurnCompleted || f.Type == TurnFailed || f.Type == TurnCancelled
}
