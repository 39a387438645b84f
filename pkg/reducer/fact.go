package reducer

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/guard"
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
	// MessageSteered: the running turn delivered messages received under
	// the steer policy (Turn.Steer) to its model at a step boundary; its
	// stream holds them in a data-steered part. Fact.Steered names them.
	MessageSteered Type = "message.steered"
	// TurnInterrupted ends a turn that a message received under the
	// interrupt policy interrupted; the message starts the next turn.
	TurnInterrupted Type = "turn.interrupted"
	// LimitsRaised: an operator raised the spend caps of a turn suspended
	// for CauseLimit.
	LimitsRaised Type = "limits.raised"
	// TimerSet: an operator moved the end of a turn's timer (CauseTimer) to
	// Wake, earlier (a time now or past ends the wait) or later.
	TimerSet Type = "timer.set"
	// ScheduleSet gives the session a schedule (Fact.Schedule), replacing
	// any; ScheduleCleared removes it. ScheduleFired records that the tick
	// posted the occurrence at Fact.Wake, in the same write as its message.
	ScheduleSet     Type = "schedule.set"
	ScheduleCleared Type = "schedule.cleared"
	ScheduleFired   Type = "schedule.fired"
	// ContextCompacted: the running turn summarised older history; Fact.Snapshot
	// names the compacted snapshot (the summary and the turns kept
	// verbatim, with the state as of this fact), which later loads rebuild
	// from. The facts and streams it summarises stay for audit.
	ContextCompacted Type = "context.compacted"
	// UsageRecorded: the invocation of a turn that was ended under it (a
	// cancel while a model call ran) completed billed steps the ending
	// could not count, since they never reached the stream; Fact.Usage is
	// theirs, and counts in the session's usage. Fact.Turn names the
	// ended turn.
	UsageRecorded Type = "usage.recorded"
)

// ActorKind says who caused a fact.
type ActorKind string

// Actor kinds.
const (
	ActorAgent    ActorKind = "agent"    // a turn's runner; ID is the turn
	ActorOperator ActorKind = "operator" // a person or API caller; ID is their identity
	ActorSystem   ActorKind = "system"   // the tick: reaper, expiry
	// ActorCallback: the holder of a callback's token (callback.ended,
	// callback.heartbeat through the callback route); ID is "token".
	ActorCallback ActorKind = "callback"
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
	// CauseLimit: the turn reached a spend cap (tokens or cost); it waits
	// for an operator to raise the cap (limits.raised) or cancel it.
	CauseLimit Cause = "limit"
	// CauseTimer: the agent called wait_until; the turn sleeps until
	// Turn.Wake, when the tick or its delayed wake resumes it.
	CauseTimer Cause = "timer"
)

// fault reports whether the cause is a fault that a later wake retries:
// throttled, model-unavailable or tools-unavailable.
func (c Cause) fault() bool {
	return c == CauseThrottled || c == CauseModelUnavailable || c == CauseToolsUnavailable
}

// Known reports whether c is one of the suspension causes above.
func (c Cause) Known() bool {
	switch c {
	case CauseBudget, CauseApproval, CauseThrottled, CauseModelUnavailable, CauseToolsUnavailable, CauseUncertain, CauseLease, CauseLimit, CauseTimer, CauseChildren, CauseBlocked, CauseCallback:
		return true
	}
	return false
}

// Decision answers an approval request.
type Decision string

// Decisions. Edit approves the call with new input (Answer.Input), which
// the tool's schema and approval rules check again; Respond answers the
// call with a result (Answer.Output) without running it.
const (
	Approve Decision = "approve"
	Deny    Decision = "deny"
	Edit    Decision = "edit"
	Respond Decision = "respond"
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

// Steering is an agent's policy for a message that arrives while a turn
// is open.
type Steering string

// Steering policies.
const (
	// SteerEnqueue: the message waits in the inbox and starts the next turn.
	SteerEnqueue Steering = "enqueue"
	// SteerSteer: the running turn delivers the message to its model at its
	// next step boundary, as a user message (Turn.Steer until then).
	SteerSteer Steering = "steer"
	// SteerInterrupt: the turn ends as interrupted at its next step
	// boundary (at once when suspended), and the message starts the next.
	SteerInterrupt Steering = "interrupt"
	// SteerReject: the message is refused while a turn is open; no fact
	// records it.
	SteerReject Steering = "reject"
)

// Known reports whether s is one of the policies above.
func (s Steering) Known() bool {
	switch s {
	case SteerEnqueue, SteerSteer, SteerInterrupt, SteerReject:
		return true
	}
	return false
}

// Message is a user message received by a session.
type Message struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Delivery is the steering policy applied to the message as it was
	// received: enqueue when no turn was open. Empty in facts written
	// before steering existed, and read as enqueue.
	Delivery Steering `json:"delivery,omitempty"`
	// Trace is the W3C traceparent of the request that posted the
	// message, when it carried one: the turn the message starts is traced
	// under it (Turn.Trace).
	Trace string `json:"trace,omitempty"`
	// Files are the files the message carries, by reference: their bytes
	// are in S3 (internal/files), never in a fact.
	Files []File `json:"files,omitempty"`
}

// File is a reference to a file's bytes in S3: its object key, media
// type, size, SHA-256 (hex) and the name it was given. A session keeps
// each digest once (internal/files).
type File struct {
	Key       string `json:"key"`
	MediaType string `json:"mediaType"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Name      string `json:"name,omitempty"`
}

// Approval is a tool call waiting for an operator's decision.
type Approval struct {
	ID         string          `json:"id"`
	ToolCallID string          `json:"toolCallId"`
	Tool       string          `json:"tool"`
	Input      json.RawMessage `json:"input"`
	Expires    time.Time       `json:"expires"`
	// Requested is when the approval was requested: the time of its
	// approval.requested fact, set when the fact is folded.
	Requested time.Time `json:"requested,omitzero"`
	// Print digests the tool as it was when the approval was asked for
	// (its schema, effect and rules): an approval binds the call to the
	// tool as it then was.
	Print string `json:"print,omitempty"`
}

// Answer is an operator's decision on one approval.
type Answer struct {
	ApprovalID string   `json:"approvalId"`
	ToolCallID string   `json:"toolCallId"`
	Decision   Decision `json:"decision"`
	Reason     string   `json:"reason,omitempty"`
	// Input is an Edit's new input, a JSON object: the call runs with it.
	Input json.RawMessage `json:"input,omitempty"`
	// Original is the input the model wrote, recorded with an Edit (the
	// pending approval's, set when the fact is folded).
	Original json.RawMessage `json:"original,omitempty"`
	// Output is a Respond's result, any JSON value: the model gets it as
	// the call's result, and the tool never runs.
	Output json.RawMessage `json:"output,omitempty"`
	// By is who answered: the answering fact's actor, set when the fact
	// is folded (whatever the fact's own answer says). ByKind is its kind.
	By     string    `json:"by,omitempty"`
	ByKind ActorKind `json:"byKind,omitempty"`
	// Requested is when the answered approval was requested, set when
	// the fact is folded (see Approval.Requested); Print is the answered
	// approval's (see Approval.Print), set likewise.
	Requested time.Time `json:"requested,omitzero"`
	Print     string    `json:"print,omitempty"`
}

// Execution is one run of a side-effecting tool call, made durable before
// it runs. A call's first execution is attempt 1; a rerun an operator
// allows after attempt n is a new execution, attempt n+1, recorded before
// it runs like the first, so that its own uncertainty goes back to an
// operator: one verdict allows exactly one more run.
type Execution struct {
	ID         string `json:"id"` // ExecutionID(ToolCallID, Attempt)
	ToolCallID string `json:"toolCallId"`
	Tool       string `json:"tool"`
	Idempotent bool   `json:"idempotent"`
	// Attempt numbers the call's executions from 1. It is omitted for
	// the first, and facts from before reruns were executions of their
	// own have 0: both mean 1 (see Try).
	Attempt int `json:"attempt,omitempty"`
}

// ExecutionID is the id of attempt n of a tool call's execution:
// ex_<tool call id> for the first, ex_<tool call id>_r<n> after it.
func ExecutionID(toolCallID string, n int) string {
	if n <= 1 {
		return "ex_" + toolCallID
	}
	return "ex_" + toolCallID + "_r" + strconv.Itoa(n)
}

// Try is the execution's attempt number, from 1.
func (e Execution) Try() int { return max(e.Attempt, 1) }

// Key is the idempotency key of the execution's tool call, the same for
// every attempt of the call: the first execution's id.
func (e Execution) Key() string { return ExecutionID(e.ToolCallID, 1) }

// Next is the execution a rerun verdict on e allows: the call's next
// attempt, under a new id and the same idempotency key.
func (e Execution) Next() Execution {
	n := e.Try() + 1
	return Execution{ID: ExecutionID(e.ToolCallID, n), ToolCallID: e.ToolCallID, Tool: e.Tool, Idempotent: e.Idempotent, Attempt: n}
}

// Settled is an operator's verdict on an uncertain execution.
type Settled struct {
	ExecutionID string  `json:"executionId"`
	ToolCallID  string  `json:"toolCallId"`
	Verdict     Verdict `json:"verdict"`
}

// Usage counts model tokens and steps, and their cost in micro-dollars
// (USD 1e-6) when the agent has a price table.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	Steps        int64 `json:"steps"`
	CostMicroUSD int64 `json:"costMicroUSD,omitempty"`
}

// Add returns u plus o.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.InputTokens + o.InputTokens, u.OutputTokens + o.OutputTokens, u.Steps + o.Steps, u.CostMicroUSD + o.CostMicroUSD}
}

// negative reports whether any of u's counts is below zero.
func (u Usage) negative() bool {
	return u.InputTokens < 0 || u.OutputTokens < 0 || u.Steps < 0 || u.CostMicroUSD < 0
}

// Sub returns u minus o.
func (u Usage) Sub(o Usage) Usage {
	return Usage{u.InputTokens - o.InputTokens, u.OutputTokens - o.OutputTokens, u.Steps - o.Steps, u.CostMicroUSD - o.CostMicroUSD}
}

// Price is a model's price table in USD per million tokens.
type Price struct {
	InputPerMTok  float64 `json:"inputPerMTok"`
	OutputPerMTok float64 `json:"outputPerMTok"`
}

// Cost is the cost of a step's tokens in micro-dollars, rounded to the
// nearest one. A step is priced on its own, so a turn's cost is the sum of
// its steps' costs.
func (p Price) Cost(input, output int64) int64 {
	return int64(math.Round(float64(input)*p.InputPerMTok + float64(output)*p.OutputPerMTok))
}

// Caps are spend limits; a zero field is no limit. Cost is in USD.
type Caps struct {
	InputTokens  int64   `json:"inputTokens,omitempty"`
	OutputTokens int64   `json:"outputTokens,omitempty"`
	Cost         float64 `json:"cost,omitempty"`
}

// Over returns c with the non-zero fields of o.
func (c Caps) Over(o Caps) Caps {
	if o.InputTokens > 0 {
		c.InputTokens = o.InputTokens
	}
	if o.OutputTokens > 0 {
		c.OutputTokens = o.OutputTokens
	}
	if o.Cost > 0 {
		c.Cost = o.Cost
	}
	return c
}

// Reach names the cap of scope that u has reached, nil for none.
func (c Caps) Reach(scope Scope, u Usage) *Limit {
	switch {
	case c.InputTokens > 0 && u.InputTokens >= c.InputTokens:
		return &Limit{Scope: scope, Measure: MeasureInputTokens, Cap: float64(c.InputTokens), Usage: float64(u.InputTokens)}
	case c.OutputTokens > 0 && u.OutputTokens >= c.OutputTokens:
		return &Limit{Scope: scope, Measure: MeasureOutputTokens, Cap: float64(c.OutputTokens), Usage: float64(u.OutputTokens)}
	case c.Cost > 0 && float64(u.CostMicroUSD) >= c.Cost*1e6:
		return &Limit{Scope: scope, Measure: MeasureCost, Cap: c.Cost, Usage: float64(u.CostMicroUSD) / 1e6}
	}
	return nil
}

// Scope is what a spend cap bounds.
type Scope string

// The scopes of spend caps.
const (
	ScopeTurn    Scope = "turn"    // the open turn
	ScopeSession Scope = "session" // the session: its ended turns and the open one
)

// Measure is what a spend cap counts.
type Measure string

// The measures of spend caps; each names a field of Caps.
const (
	MeasureInputTokens  Measure = "inputTokens"
	MeasureOutputTokens Measure = "outputTokens"
	MeasureCost         Measure = "cost" // USD
)

// Limit names the spend cap a turn reached (a turn.suspended for
// CauseLimit carries it): its scope and measure, the cap, and the usage
// that reached it, both in the measure's unit (tokens, or USD for cost).
type Limit struct {
	Scope   Scope   `json:"scope"`
	Measure Measure `json:"measure"`
	Cap     float64 `json:"cap"`
	Usage   float64 `json:"usage"`
}

// String says which cap was reached, for example "turn: a cost of
// $0.000300 reaches the cap of $0.000100".
func (l Limit) String() string { return string(l.Scope) + ": " + l.Reaches() }

// Field is the cap's field in a Raise, for example "turn.cost".
func (l Limit) Field() string { return string(l.Scope) + "." + string(l.Measure) }

// Reaches says what reached the cap, as a sentence naming the measure,
// the value and the cap.
func (l Limit) Reaches() string {
	switch l.Measure {
	case MeasureInputTokens:
		return fmt.Sprintf("%.0f input tokens reach the cap of %.0f", l.Usage, l.Cap)
	case MeasureOutputTokens:
		return fmt.Sprintf("%.0f output tokens reach the cap of %.0f", l.Usage, l.Cap)
	}
	return fmt.Sprintf("a cost of $%.6f reaches the cap of $%.6f", l.Usage, l.Cap)
}

// Amount is a value in the cap's unit as text: tokens, or USD.
func (l Limit) Amount(v float64) string {
	if l.Measure == MeasureCost {
		return fmt.Sprintf("$%.6f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// Check reports whether l names a known scope and measure.
func (l Limit) Check() error {
	if l.Scope != ScopeTurn && l.Scope != ScopeSession {
		return fmt.Errorf("limit scope %q: want turn or session", l.Scope)
	}
	if l.Measure != MeasureInputTokens && l.Measure != MeasureOutputTokens && l.Measure != MeasureCost {
		return fmt.Errorf("limit measure %q: want inputTokens, outputTokens or cost", l.Measure)
	}
	if !(l.Cap > 0) || !(l.Usage >= 0) || math.IsInf(l.Cap, 0) || math.IsInf(l.Usage, 0) {
		return fmt.Errorf("limit %s: cap %v and usage %v must be finite, the cap positive", l.Field(), l.Cap, l.Usage)
	}
	return nil
}

// Lifts reports whether r raises the cap l names past the usage that
// reached it, so the turn can go on under that cap.
func (l Limit) Lifts(r Raise) bool {
	c := r.Turn
	if l.Scope == ScopeSession {
		c = r.Session
	}
	switch l.Measure {
	case MeasureInputTokens:
		return float64(c.InputTokens) > l.Usage
	case MeasureOutputTokens:
		return float64(c.OutputTokens) > l.Usage
	}
	// As Reach compares: in micro-dollars.
	return c.Cost*1e6 > math.Round(l.Usage*1e6)
}

// Raise is an operator's new spend caps: for the open turn, and for the
// session from now on. Zero fields keep the cap they would replace.
type Raise struct {
	Turn    Caps `json:"turn,omitzero"`
	Session Caps `json:"session,omitzero"`
}

// Compaction describes a context.compacted fact: how much history the
// summary replaced, the input it was for, and what the summary cost.
type Compaction struct {
	// Turns and Messages count the ended turns (a previous summary
	// counting as one) and the messages the summary replaced; Kept counts
	// the messages kept verbatim after it.
	Turns    int `json:"turns"`
	Messages int `json:"messages"`
	Kept     int `json:"kept"`
	// Before and After are the next request's input tokens, estimated or
	// counted by the provider, without and with the compaction.
	Before int64 `json:"before"`
	After  int64 `json:"after"`
	// Model names the summariser when it is not the agent's own.
	Model string `json:"model,omitempty"`
	// Usage is the summariser call's; it counts in the session's usage.
	Usage Usage `json:"usage,omitzero"`
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
	// turn.started: the turn's W3C trace context (a traceparent), under
	// which every invocation of the turn is traced.
	Trace string `json:"trace,omitempty"`
	// turn.suspended
	Cause Cause `json:"cause,omitempty"`
	// turn.suspended for CauseLimit: the spend cap the turn reached.
	Limit *Limit `json:"limit,omitempty"`
	// turn.suspended for a model fault (see Cause.fault): how many such
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
	// turn.completed, turn.failed, turn.cancelled, turn.interrupted: usage
	// of the turn, and the key of the conversation snapshot taken as it
	// ended (or, for context.compacted, the compacted snapshot). A
	// turn.suspended may carry the turn's usage so far.
	Usage    *Usage   `json:"usage,omitempty"`
	Failure  *Failure `json:"failure,omitempty"`
	Snapshot string   `json:"snapshot,omitempty"`
	// limits.raised
	Raise *Raise `json:"raise,omitempty"`
	// schedule.set
	Schedule *Schedule `json:"schedule,omitempty"`
	// context.compacted (with Snapshot)
	Compaction *Compaction `json:"compaction,omitempty"`
	// turn.cancelled and approval.answered may carry an operator's reason.
	Reason string `json:"reason,omitempty"`
	// message.steered: the ids of the messages delivered.
	Steered []string `json:"steered,omitempty"`
	// session.created of a child session: the turn and call it answers.
	Parent *Parent `json:"parent,omitempty"`
	// child.started, child.ended, child.approval and child.cancelled (see
	// children.go).
	Child *Child `json:"child,omitempty"`
	// child.approval: the session that asked, when it is not Child but
	// one of Child's descendants (a request shown up the chain).
	Asker string `json:"asker,omitempty"`
	// turn.suspended for CauseChildren: resume as each child ends, not
	// once all have.
	Each bool `json:"each,omitempty"`
	// claim.granted, claim.released, claim.quarantined: the grant; a
	// turn.suspended for CauseBlocked: what blocks the call (claims.go).
	Grant *claims.Grant `json:"grant,omitempty"`
	Block *claims.Block `json:"block,omitempty"`
	// callback.opened, callback.heartbeat, callback.ended (callbacks.go).
	Callback *callback.Callback `json:"callback,omitempty"`
	// Guard is a guardrail's decision (guardrail.decided).
	Guard *guard.Record `json:"guard,omitempty"`
	// Version is what an invocation runs on (turn.started, turn.resumed;
	// versions.go).
	Version *Version `json:"version,omitempty"`
	// Stale names the calls a deploy changed under a waiting turn
	// (call.stale; versions.go).
	Stale []Stale `json:"stale,omitempty"`
	// Rewind is where session.rewound took the session (rewind.go).
	Rewind *Rewind `json:"rewind,omitempty"`
}

// Ends reports whether the fact ends a turn.
func (f Fact) Ends() bool {
	return f.Type == TurnCompleted || f.Type == TurnFailed || f.Type == TurnCancelled || f.Type == TurnInterrupted
}
