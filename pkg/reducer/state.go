package reducer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/guard"
)

// Status is a session's coarse state.
type Status string

// Session statuses. A session with no facts has the zero Status.
const (
	Idle      Status = "idle"      // no open turn
	Running   Status = "running"   // an invocation holds the turn until its lease
	Suspended Status = "suspended" // the turn waits; Turn.Cause says for what
)

// Turn is the open turn of a session.
type Turn struct {
	ID       string    `json:"id"`
	Stream   string    `json:"stream"`
	Started  time.Time `json:"started"`
	Messages []Message `json:"messages"` // what the turn answers
	// Trace is the turn's W3C trace context (a traceparent), as its
	// turn.started fact recorded it; empty for a turn from before traces.
	Trace string `json:"trace,omitempty"`
	// Since is when the current status began.
	Since time.Time `json:"since"`
	// Lease is when a running invocation's hold expires.
	Lease time.Time `json:"lease,omitzero"`
	// Cause is set while suspended.
	Cause Cause `json:"cause,omitempty"`
	// Pending are approvals awaiting an answer; Answers those answered.
	Pending []Approval `json:"pending,omitempty"`
	// ShownUp is set, in a child session, once its pending requests
	// reached its ancestors (child.shown); a new request clears it.
	ShownUp bool     `json:"shownUp,omitempty"`
	Answers []Answer `json:"answers,omitempty"`
	// Executions are side-effecting tool calls recorded before they ran.
	Executions []Execution `json:"executions,omitempty"`
	// Uncertain is the execution awaiting an operator verdict, if any.
	Uncertain *Execution `json:"uncertain,omitempty"`
	Verdicts  []Settled  `json:"verdicts,omitempty"`
	// Invocations counts starts and resumes of the turn.
	Invocations int `json:"invocations"`
	// Faults counts the turn's suspensions for model faults in a row, as
	// the last such suspension recorded it; a suspension for the budget,
	// a spend limit, an approval or an uncertain execution resets it. Wake is when the
	// delayed wake of a fault suspension, or the end of a timer, is due;
	// zero otherwise.
	Faults int       `json:"faults,omitempty"`
	Wake   time.Time `json:"wake,omitzero"`
	// Usage is the turn's usage as its last suspension recorded it; it is
	// counted in the session's Usage.
	Usage Usage `json:"usage,omitzero"`
	// Caps are the turn's spend caps as operators raised them, over the
	// agent's; Raised is set when they were raised since the turn last
	// suspended for CauseLimit, so it may resume.
	Caps   Caps `json:"caps,omitzero"`
	Raised bool `json:"raised,omitempty"`
	// Limit is the spend cap the turn reached while it is suspended for
	// CauseLimit (when the suspension named it); zero otherwise.
	Limit Limit `json:"limit,omitzero"`
	// TimerSet is set when an operator set the timer's end (timer.set)
	// since the turn last suspended: the wait_until calls it waits on are
	// over when it resumes, whatever time they named.
	TimerSet bool `json:"timerSet,omitempty"`
	// Steer are messages received under the steer policy and not yet
	// delivered to the turn's model; Steered those delivered
	// (message.steered). Messages still in Steer when the turn ends go to
	// the front of the inbox.
	Steer   []Message `json:"steer,omitempty"`
	Steered []Message `json:"steered,omitempty"`
	// Interrupt is set once a message received under the interrupt policy
	// waits in the inbox: the turn ends at its next step boundary.
	Interrupt bool `json:"interrupt,omitempty"`
	// Children are the child sessions the turn's tool calls started
	// (child.started), with their ends (child.ended). While suspended
	// for them, Each is the suspension's, and Seen counts the children
	// that had ended when it suspended.
	Children []Child `json:"children,omitempty"`
	Each     bool    `json:"each,omitempty"`
	Seen     int     `json:"seen,omitempty"`
	// Requests are the approval requests of its children
	// (child.approval); Shown counts those its stream showed as it last
	// suspended.
	Requests []ChildRequest `json:"requests,omitempty"`
	Shown    int            `json:"shown,omitempty"`
	// Block is what the turn waits for while suspended for CauseBlocked.
	Block *claims.Block `json:"block,omitempty"`
	// Callbacks are the tokens its tool calls handed out
	// (callback.opened), with their ends (callback.ended; callbacks.go).
	Callbacks []callback.Callback `json:"callbacks,omitempty"`
	// Guards are its guardrails' decisions, in order (guardrail.decided).
	Guards []guard.Record `json:"guards,omitempty"`
	// Version is what the turn started on, Latest what its newest
	// invocation runs on; Changed is set once an invocation ran on an
	// agent whose fingerprint differs from the turn's (versions.go).
	Version Version `json:"version,omitzero"`
	Latest  Version `json:"latest,omitzero"`
	Changed bool    `json:"changed,omitempty"`
}

// Answer returns the newest answer to an approval requested for a tool
// call (an edit sent back to approval is answered again).
func (t *Turn) Answer(toolCallID string) (Answer, bool) {
	for i := len(t.Answers) - 1; i >= 0; i-- {
		if t.Answers[i].ToolCallID == toolCallID {
			return t.Answers[i], true
		}
	}
	return Answer{}, false
}

// Edited returns the input the newest edit of a tool call gave it, if an
// answer edited it.
func (t *Turn) Edited(toolCallID string) (json.RawMessage, bool) {
	for i := len(t.Answers) - 1; i >= 0; i-- {
		if a := t.Answers[i]; a.ToolCallID == toolCallID && a.Decision == Edit {
			return a.Input, true
		}
	}
	return nil, false
}

// Execution returns the newest execution of a tool call: the open one, if
// it has no result.
func (t *Turn) Execution(toolCallID string) (Execution, bool) {
	for i := len(t.Executions) - 1; i >= 0; i-- {
		if e := t.Executions[i]; e.ToolCallID == toolCallID {
			return e, true
		}
	}
	return Execution{}, false
}

// Verdict returns the operator's verdict on an execution.
func (t *Turn) Verdict(executionID string) (Settled, bool) {
	for _, v := range t.Verdicts {
		if v.ExecutionID == executionID {
			return v, true
		}
	}
	return Settled{}, false
}

// State is a session reduced from its facts.
type State struct {
	Agent   string    `json:"agent"`
	Owner   string    `json:"owner"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Status  Status    `json:"status"`
	LastSeq int64     `json:"lastSeq"`
	// Turn is the open turn, nil when idle.
	Turn *Turn `json:"turn,omitempty"`
	// Inbox holds messages received and not yet answered by a turn.
	Inbox []Message `json:"inbox,omitempty"`
	// Usage sums every ended turn, the open turn's usage as its last
	// suspension recorded it, and the summariser calls of compactions.
	Usage Usage `json:"usage"`
	// Caps are the session's spend caps as operators raised them, over
	// the agent's.
	Caps Caps `json:"caps,omitzero"`
	// Schedule is the session's schedule, nil when it has none.
	Schedule *Schedule `json:"schedule,omitempty"`
	// Turns counts ended turns; Last is how the latest one ended.
	Turns       int64    `json:"turns"`
	Last        Type     `json:"last,omitempty"`
	LastFailure *Failure `json:"lastFailure,omitempty"`
	// Stale are the calls the newest turn that found any had waiting
	// that a deploy changed under it (call.stale; versions.go), kept once
	// the turn ended.
	Stale []Stale `json:"stale,omitempty"`
	// Snapshot is the key of the newest conversation snapshot, taken when
	// the turn ending at SnapshotSeq ended or by the compaction at it.
	Snapshot    string `json:"snapshot,omitempty"`
	SnapshotSeq int64  `json:"snapshotSeq,omitempty"`
	// Compactions counts context.compacted facts. Once there is one, the
	// conversation history starts with the latest summary.
	Compactions int `json:"compactions,omitempty"`
	// Parent, for a child session, names the turn and tool call it
	// answers; Reported is set once its last turn's end reached the parent
	// (child.reported), until the next turn starts.
	Parent   *Parent `json:"parent,omitempty"`
	Reported bool    `json:"reported,omitempty"`
	// Orphans are the children ended turns left running, until
	// child.cancelled records each cancelled (children.go).
	Orphans []Orphan `json:"orphans,omitempty"`
	// From, in a fork, is the session it was forked from; Rewinds counts
	// its session.rewound facts (rewind.go).
	From    string `json:"from,omitempty"`
	Rewinds int    `json:"rewinds,omitempty"`
	// Held: Grants, the resource claims the session's calls hold,
	// quarantined or not, and Grant(id) (claims.go).
	claims.Held
}

// ErrIllegal is matched (with errors.Is) by every *TransitionError.
var ErrIllegal = errors.New("illegal transition")

// The kinds of TransitionError a caller answering for someone tells apart
// (with errors.Is): the reducer is the one place that decides them.
var (
	// ErrNotPending: an answer or verdict names an approval or execution
	// that is not waiting for one (unknown, already answered, of another
	// turn, or the turn is not suspended for it).
	ErrNotPending = errors.New("reducer: not pending")
	// ErrBadAnswer: an answer the reducer cannot take: a decision that is
	// not approve, deny, edit or respond, or whose input or output is
	// missing or malformed, or a verdict that is not rerun or abandon.
	// Reason gives what is wrong with it.
	ErrBadAnswer = errors.New("reducer: bad answer")
)

// TransitionError rejects a fact that cannot follow the state it was applied to.
type TransitionError struct {
	Seq    int64
	Type   Type
	Status Status
	Reason string
	// Kind, when set, is ErrNotPending or ErrBadAnswer, which the error
	// then matches besides ErrIllegal.
	Kind error
}

// RefusalReason returns why err, an answer the reducer refused, was refused: the
// TransitionError's reason, or err's own text.
func RefusalReason(err error) string {
	if te, ok := errors.AsType[*TransitionError](err); ok {
		return te.Reason
	}
	return strings.TrimPrefix(err.Error(), ErrBadAnswer.Error()+": ")
}

func (e *TransitionError) Error() string {
	status := e.Status
	if status == "" {
		status = "new"
	}
	return fmt.Sprintf("reducer: fact %d (%s) illegal in status %s: %s", e.Seq, e.Type, status, e.Reason)
}

// Is makes errors.Is(err, ErrIllegal) true, and errors.Is(err, e.Kind).
func (e *TransitionError) Is(target error) bool {
	return target == ErrIllegal || (e.Kind != nil && target == e.Kind)
}

// Holds reports whether the turn mine is still held by the invocation that
// ran it: s has it running, in the same invocation. A fact that took the
// turn out of that invocation's hands (a cancel, a suspension, a takeover)
// makes it false. The one test of it.
func (s State) Holds(mine *Turn) bool {
	t := s.Turn
	return t != nil && mine != nil && s.Status == Running && t.ID == mine.ID && t.Invocations == mine.Invocations
}

// Reduce folds facts, starting from an empty session.
func Reduce(facts []Fact) (State, error) {
	return State{}.Apply(facts...)
}

// Apply folds facts onto s and returns the new state. s itself is never
// modified. On an illegal fact it returns the zero State and the error.
func (s State) Apply(facts ...Fact) (State, error) {
	next := s.clone()
	for _, f := range facts {
		if err := next.apply(f); err != nil {
			return State{}, err
		}
	}
	return next, nil
}

// clone copies s deeply enough that applying facts to the copy never
// writes through to s: every slice and pointer apply may change is its own.
func (s *State) clone() State {
	c := *s
	c.Inbox = slices.Clone(s.Inbox)
	c.Grants = slices.Clone(s.Grants)
	c.Orphans = slices.Clone(s.Orphans)
	c.Stale = slices.Clone(s.Stale)
	if s.Turn != nil {
		t := *s.Turn
		t.Messages = slices.Clone(t.Messages)
		t.Pending = slices.Clone(t.Pending)
		t.Answers = slices.Clone(t.Answers)
		t.Executions = slices.Clone(t.Executions)
		t.Verdicts = slices.Clone(t.Verdicts)
		t.Steer = slices.Clone(t.Steer)
		t.Steered = slices.Clone(t.Steered)
		t.Children = slices.Clone(t.Children)
		t.Requests = slices.Clone(t.Requests)
		t.Callbacks = slices.Clone(t.Callbacks)
		t.Guards = slices.Clone(t.Guards)
		if t.Uncertain != nil {
			u := *t.Uncertain
			t.Uncertain = &u
		}
		c.Turn = &t
	}
	if s.LastFailure != nil {
		lf := *s.LastFailure
		c.LastFailure = &lf
	}
	if s.Schedule != nil {
		sc := *s.Schedule // schedule.fired moves From
		c.Schedule = &sc
	}
	return c
}

// appliers holds, for each fact type, the function that checks a fact of
// that type against the state and folds it in. It is read-only.
var appliers = map[Type]func(*State, Fact) error{
	SessionCreated:    rule(sessionRules.applySessionCreated),
	MessageReceived:   rule(sessionRules.applyMessageReceived),
	MessageSteered:    rule(sessionRules.applyMessageSteered),
	TurnStarted:       rule(turnRules.applyTurnStarted),
	TurnSuspended:     rule(turnRules.applyTurnSuspended),
	TurnResumed:       rule(turnRules.applyTurnResumed),
	ApprovalRequested: rule(toolRules.applyApprovalRequested),
	ApprovalAnswered:  rule(toolRules.applyApprovalAnswered),
	ExecutionStarted:  rule(toolRules.applyExecutionStarted),
	ExecutionVerdict:  rule(toolRules.applyExecutionVerdict),
	ScheduleSet:       rule(sessionRules.applyScheduleSet),
	UsageRecorded:     rule(sessionRules.applyUsageRecorded),
	ScheduleCleared:   rule(sessionRules.applyScheduleCleared),
	ScheduleFired:     rule(sessionRules.applyScheduleFired),
	ContextCompacted:  rule(turnRules.applyContextCompacted),
	TimerSet:          rule(turnRules.applyTimerSet),
	LimitsRaised:      rule(turnRules.applyLimitsRaised),
	TurnCompleted:     rule(turnRules.applyTurnEnded),
	TurnFailed:        rule(turnRules.applyTurnEnded),
	TurnCancelled:     rule(turnRules.applyTurnCancelled),
	TurnInterrupted:   rule(turnRules.applyTurnInterrupted),
	ClaimGranted:      rule(claimRules.applyClaimGranted),
	ClaimReleased:     rule(claimRules.applyClaimReleased),
	ClaimQuarantined:  rule(claimRules.applyClaimQuarantined),
}

// The appliers are grouped by concern, each group a type over the state
// it folds facts into: the session's own facts (sessionRules,
// apply_session.go), the turn's (turnRules, apply_turn.go), approvals and
// executions (toolRules, apply_tools.go), children (childRules,
// children.go) and claims (claimRules, claims.go).
type (
	sessionRules struct{ *State }
	turnRules    struct{ *State }
	toolRules    struct{ *State }
	childRules   struct{ *State }
	claimRules   struct{ *State }
)

// rule is the applier that folds a fact with m, one of rules R's appliers.
func rule[R ~struct{ *State }](m func(R, Fact) error) func(*State, Fact) error {
	return func(s *State, f Fact) error { return m(R{s}, f) }
}

// apply checks what every fact needs (the next seq, a created session, an
// actor), then hands f to its type's applier.
func (s *State) apply(f Fact) error {
	if f.Seq != s.LastSeq+1 {
		return s.illegal(f, "seq %d does not follow %d", f.Seq, s.LastSeq)
	}
	if f.Type != SessionCreated && s.LastSeq == 0 {
		return s.illegal(f, "session not created")
	}
	if f.Actor.Kind == "" {
		return s.illegal(f, "fact has no actor")
	}
	if (f.Usage != nil && f.Usage.negative()) || (f.Compaction != nil && f.Compaction.Usage.negative()) {
		return s.illegal(f, "negative usage")
	}
	applier, ok := appliers[f.Type]
	if !ok {
		return s.illegal(f, "unknown fact type")
	}
	if err := applier(s, f); err != nil {
		return err
	}
	s.LastSeq = f.Seq
	s.Updated = f.Time
	return nil
}

// illegal is the *TransitionError for f in s's current status.
func (s *State) illegal(f Fact, format string, args ...any) error {
	return s.refuse(f, nil, format, args...)
}

// refuse is illegal of a kind (ErrNotPending, ErrBadAnswer; nil for none)
// that the error then matches.
func (s *State) refuse(f Fact, kind error, format string, args ...any) error {
	return &TransitionError{Seq: f.Seq, Type: f.Type, Status: s.Status, Reason: fmt.Sprintf(format, args...), Kind: kind}
}

// needTurn checks that f names the open turn, as every turn fact must.
func (s *State) needTurn(f Fact) error { return s.openTurn(f, nil) }

// openTurn is needTurn whose error is of kind.
func (s *State) openTurn(f Fact, kind error) error {
	if s.Turn == nil {
		return s.refuse(f, kind, "no open turn")
	}
	if f.Turn != s.Turn.ID {
		return s.refuse(f, kind, "turn %q is not the open turn %q", f.Turn, s.Turn.ID)
	}
	return nil
}

func (s *State) end(f Fact) {
	if f.Usage != nil {
		// The end's usage is the whole turn's: what its suspensions
		// recorded is part of it.
		s.Usage = s.Usage.Add(f.Usage.Sub(s.Turn.Usage))
	}
	childRules{s}.orphan(f.Type)
	if len(s.Turn.Steer) > 0 {
		// Never delivered: they start the next turn.
		s.Inbox = append(slices.Clone(s.Turn.Steer), s.Inbox...)
	}
	s.Turn = nil
	s.Status = Idle
	s.Turns++
	s.Last = f.Type
	s.LastFailure = nil
	if f.Failure != nil {
		lf := *f.Failure
		s.LastFailure = &lf
	}
	if f.Snapshot != "" {
		s.Snapshot, s.SnapshotSeq = f.Snapshot, f.Seq
	}
}

// nextExecution checks that e may start: it is its call's first execution,
// or the one next attempt a rerun verdict on the call's newest execution
// allows.
func (t *Turn) nextExecution(e Execution) error {
	for _, x := range t.Executions {
		if x.ID == e.ID {
			return fmt.Errorf("execution %s already started", e.ID)
		}
	}
	prev, ok := t.Execution(e.ToolCallID)
	if !ok {
		if e.Try() != 1 {
			return fmt.Errorf("execution %s is attempt %d of tool call %s, which has none", e.ID, e.Try(), e.ToolCallID)
		}
		return nil
	}
	if v, settled := t.Verdict(prev.ID); !settled || v.Verdict != Rerun {
		return fmt.Errorf("execution %s of tool call %s: its execution %s has no rerun verdict", e.ID, e.ToolCallID, prev.ID)
	}
	if e.Try() != prev.Try()+1 {
		return fmt.Errorf("execution %s is attempt %d of tool call %s, want %d", e.ID, e.Try(), e.ToolCallID, prev.Try()+1)
	}
	return nil
}

// openExecution checks that e, named uncertain, is a recorded execution
// that a verdict could still settle: its call's newest, with no verdict.
func (t *Turn) openExecution(e Execution) error {
	newest, ok := t.Execution(e.ToolCallID)
	if !ok || newest.ID != e.ID {
		return fmt.Errorf("execution %s is not the newest started for tool call %s", e.ID, e.ToolCallID)
	}
	if _, settled := t.Verdict(e.ID); settled {
		return fmt.Errorf("execution %s already has a verdict", e.ID)
	}
	return nil
}
