package api

import (
	"encoding/json"
	"time"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
)

// Limits on request content, as the operator API applies them.
const (
	// MaxText is the longest message text accepted, in bytes of UTF-8
	// (reducer.MaxText), a schedule's text included.
	MaxText = reducer.MaxText
	// MaxReason is the longest reason accepted with an answer or a cancel.
	MaxReason = 4 << 10
	// MaxListLimit is the largest page GET /sessions serves.
	MaxListLimit = 100
)

// Headers of the operator API, as the server defines them.
const (
	// IdempotencyHeader names a POST's Idempotency-Key: a request sent
	// again under the same key is answered as it was, writing nothing.
	// (The server's internal/idempotency takes these, by constant.)
	IdempotencyHeader = "Idempotency-Key"
	// ReplayedHeader is set on an answer given again under a key.
	ReplayedHeader = "Idempotent-Replayed"
	// MaxIdempotencyKey is the longest key accepted, in bytes.
	MaxIdempotencyKey = 255
)

// Grant is a resource claim a session's call holds (or held, for an
// orphaned grant); Claim is one resource a grant or a call claims; Block
// is what a blocked call waits for.
type (
	Grant = claims.Grant
	Claim = claims.Claim
	Block = claims.Block
)

// Part is one part of a turn stream: an AI SDK UI message stream part, or
// one of baton's data parts.
type Part = parts.Part

// Session is a session as GET /sessions/{id} and POST /sessions return it:
// its state reduced from the facts.
type Session struct {
	ID      string         `json:"id"`
	Agent   string         `json:"agent"`
	Status  reducer.Status `json:"status"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
	LastSeq int64          `json:"lastSeq"`
	// Usage sums the completed steps of ended turns and of the open turn;
	// costMicroUSD is their cost from the agent's prices; compactions'
	// summariser calls count too. A running turn's steps are counted from
	// its stream (the latest step's turnUsage), so they show before it
	// suspends or ends.
	Usage reducer.Usage `json:"usage"`
	// UsageStale is set when the running turn's stream could not be read
	// (or, written before steps said the turn's usage, is too long to sum
	// for a view): Usage and Turn.Usage then count the turn's steps as its
	// last suspension recorded them.
	UsageStale bool `json:"usageStale,omitempty"`
	// Caps are the session's spend caps as operators raised them.
	Caps reducer.Caps `json:"caps,omitzero"`
	// Compactions counts the times a turn summarised the session's older
	// history (context.compacted); their summariser calls count in Usage.
	Compactions int              `json:"compactions,omitempty"`
	Turns       int64            `json:"turns"`
	Last        reducer.Type     `json:"last,omitempty"`
	LastFailure *reducer.Failure `json:"lastFailure,omitempty"`
	// Stale are the calls the newest turn that found any had waiting
	// that a deploy changed under it: its tool gone, its input refused by
	// the new schema (the model got an error result, nothing ran), or
	// its tool changed since approved (asked again).
	Stale []reducer.Stale `json:"stale,omitempty"`
	// Inbox counts messages waiting for a turn.
	Inbox int `json:"inbox"`
	// From, in a fork, is the session it was forked from; Rewinds counts
	// the times it was rewound or forked to a point (session.rewound).
	From    string `json:"from,omitempty"`
	Rewinds int    `json:"rewinds,omitempty"`
	// Turn is the open turn, null when idle.
	Turn *Turn `json:"turn"`
	// Pending are the approvals the open turn waits for.
	Pending []Approval `json:"pending"`
	// ChildPending are the approval requests of the open turn's child
	// sessions or deeper descendants, pending in the session that asked
	// (see ChildApproval); Parent names the turn a child session answers.
	ChildPending []ChildApproval `json:"childPending,omitempty"`
	Parent       *reducer.Parent `json:"parent,omitempty"`
	// Uncertain is the execution waiting for a verdict, null when none.
	Uncertain *Execution `json:"uncertain"`
	// Callbacks are the open turn's tool calls waiting for their
	// callback (completed by the token's holder, or by hand: POST
	// /sessions/{id}/callbacks/{toolCallId}); absent when none.
	Callbacks []Callback `json:"callbacks,omitempty"`
	// Schedule is the session's schedule, null when none.
	Schedule *Schedule `json:"schedule"`
	// Grants are the resource claims the session's calls hold (some
	// quarantined); Blocked is what the open turn waits for while it is
	// suspended as blocked, null otherwise; a blocker of another owner is
	// opaque.
	Grants  []Grant `json:"grants"`
	Blocked *Block  `json:"blocked"`
}

// Schedule is a session's schedule and its next occurrence.
type Schedule struct {
	Cron string    `json:"cron"`
	Text string    `json:"text"`
	Next time.Time `json:"next,omitzero"`
}

// Turn is the open turn of a session.
type Turn struct {
	ID          string        `json:"id"`
	Stream      string        `json:"stream"`
	Cause       reducer.Cause `json:"cause,omitempty"`
	Started     time.Time     `json:"started"`
	Since       time.Time     `json:"since"`
	Lease       time.Time     `json:"lease,omitzero"`
	Invocations int           `json:"invocations"`
	// Wake is when a suspension on a timer (cause "timer") or for a fault
	// ends; zero otherwise.
	Wake time.Time `json:"wake,omitzero"`
	// Usage sums the turn's completed steps: from its stream while it
	// runs (unless the session says usageStale), as its last suspension
	// recorded them while it is suspended. Caps are its spend caps as
	// operators raised them.
	Usage reducer.Usage `json:"usage,omitzero"`
	Caps  reducer.Caps  `json:"caps,omitzero"`
	// Limit names the spend cap a turn suspended at a limit (cause
	// "limit") reached: scope turn or session, measure inputTokens,
	// outputTokens or cost, the cap and the usage that reached it (tokens,
	// or USD). A raise must lift that cap past that usage.
	Limit *reducer.Limit `json:"limit,omitempty"`
	// Steer counts messages waiting to be steered into the turn at its
	// next step boundary; Interrupt is set when a message waits to end it
	// there (the agent's steering policy).
	Steer     int  `json:"steer,omitempty"`
	Interrupt bool `json:"interrupt,omitempty"`
	// Version is what the turn started on: the agent's fingerprint and
	// the build; Latest what its newest invocation runs on. Changed is set
	// once it resumed on an agent whose fingerprint differs.
	Version reducer.Version `json:"version,omitzero"`
	Latest  reducer.Version `json:"latest,omitzero"`
	Changed bool            `json:"changed,omitempty"`
}

// Approval is a tool call waiting for an operator's decision.
type Approval struct {
	ApprovalID string          `json:"approvalId"`
	ToolCallID string          `json:"toolCallId"`
	Tool       string          `json:"tool"`
	Input      json.RawMessage `json:"input"`
	Expires    time.Time       `json:"expires,omitzero"`
}

// ChildApproval is an approval request of a child session of the open
// turn, or of a deeper descendant, pending in the session that asked
// (Session; Child is the turn's child it came through): answer it here
// (POST /sessions/{id}/approvals/{approvalId}), on any session of the
// chain down to Session, or in the chat.
type ChildApproval struct {
	Child      string    `json:"child"`
	Session    string    `json:"session"`
	ApprovalID string    `json:"approvalId"`
	ToolCallID string    `json:"toolCallId"`
	Tool       string    `json:"tool"`
	Expires    time.Time `json:"expires,omitzero"`
}

// Execution is a side-effecting tool call that may or may not have run.
// Attempt is 1 for the call's first run, n+1 for the rerun a verdict on
// attempt n allowed: each attempt has its own execution id and verdict.
type Execution struct {
	ExecutionID string `json:"executionId"`
	ToolCallID  string `json:"toolCallId"`
	Tool        string `json:"tool"`
	Idempotent  bool   `json:"idempotent"`
	Attempt     int    `json:"attempt"`
}

// Callback is a tool call waiting for its callback: handed out at
// Opened, its last heartbeat at Beat (zero for none), timing out at
// Deadline unless a heartbeat moves it. The token is never shown.
type Callback struct {
	ToolCallID string    `json:"toolCallId"`
	Tool       string    `json:"tool"`
	Attempt    int       `json:"attempt"`
	Opened     time.Time `json:"opened"`
	Beat       time.Time `json:"beat,omitzero"`
	Deadline   time.Time `json:"deadline"`
}

// Summary is one entry of GET /sessions.
type Summary struct {
	ID      string         `json:"id"`
	Agent   string         `json:"agent"`
	Status  reducer.Status `json:"status"`
	LastSeq int64          `json:"lastSeq"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
	Turn    string         `json:"turn,omitempty"`
	Cause   reducer.Cause  `json:"cause,omitempty"`
	// Usage is the session's usage as the facts recorded it: its ended
	// turns' billed steps, and a running turn's as its last suspension
	// recorded them (GET /sessions/{id} counts a running turn's stream).
	Usage reducer.Usage `json:"usage"`
}

// List is the body of GET /sessions. Next is the cursor of the next page,
// "" after the last one.
type List struct {
	Sessions []Summary `json:"sessions"`
	Next     string    `json:"next"`
}

// Facts is the body of GET /sessions/{id}/facts.
type Facts struct {
	Facts []reducer.Fact `json:"facts"`
}

// StreamPage is the JSON body of GET /sessions/{id}/turns/{turn}/stream.
// Cursor names the last part delivered (or is the request's cursor when
// none was); Closed is how the stream was closed ("completed", "failed",
// "cancelled", "interrupted"), "" while it is open.
type StreamPage struct {
	Parts  []StreamEntry `json:"parts"`
	Cursor string        `json:"cursor"`
	Closed string        `json:"closed"`
}

// StreamEntry is one part of a turn stream and the cursor naming it: read
// again after Cursor for the parts that follow it (an event stream's
// event id).
type StreamEntry struct {
	Cursor string `json:"cursor"`
	Part   Part   `json:"part"`
}

// Export is the answer of GET /sessions/{id}/export: every fact of the
// session and every part of each of its turn streams.
type Export struct {
	Session  string         `json:"session"`
	Exported time.Time      `json:"exported"`
	Facts    []reducer.Fact `json:"facts"`
	Streams  []ExportedTurn `json:"streams"`
	// Files are the files its messages and tools' outputs name, once per
	// digest, each with a short-lived presigned GET of its bytes.
	Files []ExportedFile `json:"files,omitempty"`
}

// ExportedFile is a file of an export: its reference and a presigned
// GET (15 minutes) of its bytes.
type ExportedFile struct {
	reducer.File
	URL string `json:"url"`
}

// ExportedTurn is one turn stream of an export.
type ExportedTurn struct {
	Turn   string `json:"turn"`
	Closed string `json:"closed,omitempty"`
	Parts  []Part `json:"parts"`
}

// Orphans is GET /claims/orphans: the caller's orphaned grants, those its
// deleted sessions held while their effect may still have run, oldest
// first (never null). Each stays held, blocking the calls it conflicts
// with, until the caller releases it.
type Orphans struct {
	Orphans []Grant `json:"orphans"`
}

// MessageAccepted is the body of a 202 answer to POST .../messages.
type MessageAccepted struct {
	MessageID string `json:"messageId"`
}

// Accepted is the body of the other 202 answers.
type Accepted struct {
	Status string `json:"status"`
}

// Error is the body of every 4xx and 5xx answer.
type Error struct {
	Error string `json:"error"`
}

// CreateRequest is the body of POST /sessions.
type CreateRequest struct {
	Agent string `json:"agent"`
}

// MessageRequest is the body of POST /sessions/{id}/messages.
type MessageRequest struct {
	Text string `json:"text"`
	// Files are the message's files (see FilePart); with files the text
	// may be empty.
	Files []FilePart `json:"files,omitempty"`
}

// AnswerRequest is the body of POST /sessions/{id}/approvals/{approvalId}:
// approve or deny, edit (run the call with Input instead of the model's
// input: the tool's schema and rules check it again) or respond (give the
// model Output as the call's result; the tool never runs), with an
// optional reason.
type AnswerRequest struct {
	Decision reducer.Decision `json:"decision"`
	Reason   string           `json:"reason,omitempty"`
	// Input is an edit's new input, a JSON object.
	Input json.RawMessage `json:"input,omitempty"`
	// Output is a response's result, any JSON value.
	Output json.RawMessage `json:"output,omitempty"`
}

// CancelRequest is the body of POST /sessions/{id}/cancel; it may be
// omitted.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// VerdictRequest is the body of POST /sessions/{id}/executions/{executionId}:
// rerun or abandon.
type VerdictRequest struct {
	Verdict reducer.Verdict `json:"verdict"`
}

// RaiseRequest is the body of POST /sessions/{id}/limits: the new spend
// caps of a turn suspended at a limit; zero or absent fields keep the caps
// they would replace.
type RaiseRequest = reducer.Raise

// TimerRequest is the body of POST /sessions/{id}/wake: when the turn's
// timer ends. An absent at, or one now or past, ends the wait at once.
type TimerRequest struct {
	At *time.Time `json:"at"`
}

// ScheduleRequest is the body of PUT /sessions/{id}/schedule: post text at
// each occurrence of cron (five fields, UTC).
type ScheduleRequest struct {
	Cron string `json:"cron"`
	Text string `json:"text"`
}

// CallbackRequest completes a tool call that completes by callback (POST
// /callbacks/{token}): Output, any JSON value, is the call's result; or
// Error, text, is the error result the model sees. Exactly one is set.
type CallbackRequest struct {
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// CompleteCallRequest is the body of POST
// /sessions/{id}/callbacks/{toolCallId}, by which the session's owner
// completes a call waiting for its callback by hand, without the token:
// a CallbackRequest, and a reason recorded with it (optional).
type CompleteCallRequest struct {
	CallbackRequest
	Reason string `json:"reason,omitempty"`
}

// CallbackAnswer is the answer of the callback routes: the status
// ("completed", "failed", or for a heartbeat "open") and, for a
// heartbeat, the callback's new deadline.
type CallbackAnswer struct {
	Status   string    `json:"status"`
	Deadline time.Time `json:"deadline,omitzero"`
}
