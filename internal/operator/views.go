package operator

import (
	"encoding/json"
	"time"

	"github.com/baton-run/baton/internal/httpjson"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

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
	// Inbox counts messages waiting for a turn.
	Inbox int `json:"inbox"`
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
	// Schedule is the session's schedule, null when none.
	Schedule *Schedule `json:"schedule"`
	// Grants are the resource claims the session's calls hold (some
	// quarantined); Blocked is what the open turn waits for while it is
	// suspended as blocked, null otherwise (see claims.go).
	Grants  []claims.Grant `json:"grants"`
	Blocked *reducer.Block `json:"blocked"`
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
}

// Approval is a tool call waiting for an operator's decision.
type Approval struct {
	ApprovalID string          `json:"approvalId"`
	ToolCallID string          `json:"toolCallId"`
	Tool       string          `json:"tool"`
	Input      json.RawMessage `json:"input"`
	Expires    time.Time       `json:"expires,omitzero"`
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
// none was); Closed is how the stream was closed, "" while it is open.
type StreamPage struct {
	Parts  []streams.Entry `json:"parts"`
	Cursor streams.Cursor  `json:"cursor"`
	Closed streams.Status  `json:"closed"`
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
type Error = httpjson.ErrorBody

func sessionView(id string, st reducer.State) Session {
	s := Session{
		ID: id, Agent: st.Agent, Status: st.Status, Created: st.Created, Updated: st.Updated,
		LastSeq: st.LastSeq, Usage: st.Usage, Caps: st.Caps, Compactions: st.Compactions, Turns: st.Turns, Last: st.Last, LastFailure: st.LastFailure,
		Inbox: len(st.Inbox), Pending: []Approval{}, Parent: st.Parent,
	}
	if sc := st.Schedule; sc != nil {
		s.Schedule = &Schedule{Cron: sc.Cron, Text: sc.Text, Next: sc.Next()}
	}
	s.Grants, s.Blocked = claimsView(st)
	if t := st.Turn; t != nil {
		s.Turn = &Turn{ID: t.ID, Stream: t.Stream, Cause: t.Cause, Started: t.Started, Since: t.Since,
			Lease: t.Lease, Invocations: t.Invocations, Wake: t.Wake, Usage: t.Usage, Caps: t.Caps,
			Steer: len(t.Steer), Interrupt: t.Interrupt}
		if l := t.Limit; l != (reducer.Limit{}) && st.Status == reducer.Suspended && t.Cause == reducer.CauseLimit {
			s.Turn.Limit = &l
		}
		for _, p := range t.Pending {
			s.Pending = append(s.Pending, Approval{ApprovalID: p.ID, ToolCallID: p.ToolCallID, Tool: p.Tool,
				Input: p.Input, Expires: p.Expires})
		}
		if u := t.Uncertain; u != nil {
			s.Uncertain = &Execution{ExecutionID: u.ID, ToolCallID: u.ToolCallID, Tool: u.Tool, Idempotent: u.Idempotent, Attempt: u.Try()}
		}
	}
	return s
}

func summaryView(h dynamo.Head) Summary {
	return Summary{ID: h.Session, Agent: h.Agent, Status: h.Status, LastSeq: h.LastSeq,
		Created: h.Created, Updated: h.Updated, Turn: h.Turn, Cause: h.Cause, Usage: h.Usage}
}
