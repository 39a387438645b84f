package reducer

import (
	"errors"
	"fmt"
	"slices"
	"time"
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
	// Since is when the current status began.
	Since time.Time `json:"since"`
	// Lease is when a running invocation's hold expires.
	Lease time.Time `json:"lease,omitzero"`
	// Cause is set while suspended.
	Cause Cause `json:"cause,omitempty"`
	// Pending are approvals awaiting an answer; Answers those answered.
	Pending []Approval `json:"pending,omitempty"`
	Answers []Answer   `json:"answers,omitempty"`
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
}

// Answer returns the answer to the approval requested for a tool call.
func (t *Turn) Answer(toolCallID string) (Answer, bool) {
	for _, a := range t.Answers {
		if a.ToolCallID == toolCallID {
			return a, true
		}
	}
	return Answer{}, false
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
	// Snapshot is the key of the newest conversation snapshot, taken when
	// the turn ending at SnapshotSeq ended or by the compaction at it.
	Snapshot    string `json:"snapshot,omitempty"`
	SnapshotSeq int64  `json:"snapshotSeq,omitempty"`
	// Compactions counts context.compacted facts. Once there is one, the
	// conversation history starts with the latest summary.
	Compactions int `json:"compactions,omitempty"`
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
	// ErrBadAnswer: a decision that is not approve or deny, or a verdict
	// that is not rerun or abandon.
	ErrBadAnswer = errors.New("reducer: unknown decision or verdict")
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
	if s.Turn != nil {
		t := *s.Turn
		t.Messages = slices.Clone(t.Messages)
		t.Pending = slices.Clone(t.Pending)
		t.Answers = slices.Clone(t.Answers)
		t.Executions = slices.Clone(t.Executions)
		t.Verdicts = slices.Clone(t.Verdicts)
		t.Steer = slices.Clone(t.Steer)
		t.Steered = slices.Clone(t.Steered)
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

func (s *State) apply(f Fact) error {
	illegal := func(format string, args ...any) error {
		return &TransitionError{Seq: f.Seq, Type: f.Type, Status: s.Status, Reason: fmt.Sprintf(format, args...)}
	}
	refuse := func(kind error, format string, args ...any) error {
		return &TransitionError{Seq: f.Seq, Type: f.Type, Status: s.Status, Reason: fmt.Sprintf(format, args...), Kind: kind}
	}
	if f.Seq != s.LastSeq+1 {
		return illegal("seq %d does not follow %d", f.Seq, s.LastSeq)
	}
	if f.Type != SessionCreated && s.LastSeq == 0 {
		return illegal("session not created")
	}
	if f.Actor.Kind == "" {
		return illegal("fact has no actor")
	}
	if (f.Usage != nil && f.Usage.negative()) || (f.Compaction != nil && f.Compaction.Usage.negative()) {
		return illegal("negative usage")
	}
	// Every turn fact must name the open turn.
	openTurn := func(kind error) error {
		if s.Turn == nil {
			return refuse(kind, "no open turn")
		}
		if f.Turn != s.Turn.ID {
			return refuse(kind, "turn %q is not the open turn %q", f.Turn, s.Turn.ID)
		}
		return nil
	}
	needTurn := func() error { return openTurn(nil) }

	switch f.Type {
	case SessionCreated:
		if s.LastSeq != 0 {
			return illegal("session already created")
		}
		if f.Agent == "" {
			return illegal("no agent")
		}
		s.Agent, s.Owner, s.Created, s.Status = f.Agent, f.Owner, f.Time, Idle

	case MessageReceived:
		if f.Message == nil || f.Message.ID == "" {
			return illegal("no message")
		}
		m := *f.Message
		switch d := m.Delivery; {
		case d == "" || d == SteerEnqueue:
			s.Inbox = append(s.Inbox, m)
		case d == SteerReject:
			return illegal("a rejected message is not received")
		case !d.Known():
			return illegal("unknown delivery %q", d)
		case s.Turn == nil:
			return illegal("delivery %s needs an open turn", d)
		case d == SteerSteer:
			s.Turn.Steer = append(s.Turn.Steer, m)
		case d == SteerInterrupt:
			s.Inbox = append(s.Inbox, m)
			s.Turn.Interrupt = true
		}

	case MessageSteered:
		if err := needTurn(); err != nil {
			return err
		}
		if s.Status != Running {
			return illegal("only a running turn delivers messages")
		}
		if len(f.Steered) == 0 {
			return illegal("no message named")
		}
		for _, id := range f.Steered {
			i := slices.IndexFunc(s.Turn.Steer, func(m Message) bool { return m.ID == id })
			if i < 0 {
				return illegal("message %q is not waiting to be steered", id)
			}
			s.Turn.Steered = append(s.Turn.Steered, s.Turn.Steer[i])
			s.Turn.Steer = slices.Delete(s.Turn.Steer, i, i+1)
		}

	case TurnStarted:
		if s.Status != Idle {
			return illegal("a turn is already open")
		}
		if f.Turn == "" || f.Stream == "" {
			return illegal("turn or stream not named")
		}
		if len(s.Inbox) == 0 {
			return illegal("no message to answer")
		}
		s.Turn = &Turn{ID: f.Turn, Stream: f.Stream, Started: f.Time, Since: f.Time,
			Messages: s.Inbox, Lease: f.Lease, Invocations: 1}
		s.Inbox = nil
		s.Status = Running

	case TurnSuspended:
		if err := needTurn(); err != nil {
			return err
		}
		if s.Status != Running {
			return illegal("only a running turn suspends")
		}
		if !f.Cause.Fault() && f.Cause != CauseTimer && (f.Faults != 0 || !f.Wake.IsZero()) {
			return illegal("a %s suspension carries a fault count or wake time", f.Cause)
		}
		if f.Cause == CauseTimer && (f.Wake.IsZero() || f.Faults != 0) {
			return illegal("a timer suspension needs a wake time and no fault count")
		}
		if f.Faults < 0 {
			return illegal("negative fault count %d", f.Faults)
		}
		if f.Limit != nil {
			if f.Cause != CauseLimit {
				return illegal("a %s suspension names a spend cap", f.Cause)
			}
			if err := f.Limit.Check(); err != nil {
				return illegal("%v", err)
			}
		}
		if f.Usage != nil {
			s.Usage = s.Usage.Add(f.Usage.Sub(s.Turn.Usage))
			s.Turn.Usage = *f.Usage
		}
		s.Turn.Wake, s.Turn.Raised, s.Turn.TimerSet = time.Time{}, false, false
		s.Turn.Limit = Limit{}
		if f.Limit != nil {
			s.Turn.Limit = *f.Limit
		}
		switch f.Cause {
		case CauseThrottled, CauseModelUnavailable, CauseToolsUnavailable:
			s.Turn.Faults, s.Turn.Wake = f.Faults, f.Wake
		case CauseTimer:
			s.Turn.Faults, s.Turn.Wake = 0, f.Wake
		case CauseLease:
			// The invocation died: neither progress nor a fault.
		case CauseBudget, CauseLimit:
			s.Turn.Faults = 0
		case CauseApproval:
			if len(s.Turn.Pending) == 0 {
				return illegal("suspended for approval with none pending")
			}
			s.Turn.Faults = 0
		case CauseUncertain:
			if f.Execution == nil {
				return illegal("suspended as uncertain without the execution")
			}
			if err := s.Turn.openExecution(*f.Execution); err != nil {
				return illegal("%v", err)
			}
			e := *f.Execution
			s.Turn.Uncertain = &e
			s.Turn.Faults = 0
		default:
			return illegal("unknown cause %q", f.Cause)
		}
		s.Status, s.Turn.Cause, s.Turn.Since, s.Turn.Lease = Suspended, f.Cause, f.Time, time.Time{}

	case TurnResumed:
		if err := needTurn(); err != nil {
			return err
		}
		switch s.Status {
		case Suspended:
			if len(s.Turn.Pending) > 0 {
				return illegal("%d approval(s) still pending", len(s.Turn.Pending))
			}
			if s.Turn.Uncertain != nil {
				return illegal("execution %s awaits a verdict", s.Turn.Uncertain.ID)
			}
		case Running:
			// Taking over from an invocation that died: only once its lease ran out.
			if !f.Time.After(s.Turn.Lease) {
				return illegal("the running invocation's lease holds until %s", s.Turn.Lease.Format(time.RFC3339Nano))
			}
		}
		s.Status, s.Turn.Cause, s.Turn.Since, s.Turn.Lease = Running, "", f.Time, f.Lease
		s.Turn.Limit = Limit{}
		s.Turn.Wake = time.Time{}
		s.Turn.Invocations++

	case ApprovalRequested:
		if err := needTurn(); err != nil {
			return err
		}
		if s.Status != Running {
			return illegal("only a running turn requests approval")
		}
		a := f.Approval
		if a == nil || a.ID == "" || a.ToolCallID == "" {
			return illegal("approval not named")
		}
		for _, p := range s.Turn.Pending {
			if p.ID == a.ID || p.ToolCallID == a.ToolCallID {
				return illegal("approval %s already pending", a.ID)
			}
		}
		if _, ok := s.Turn.Answer(a.ToolCallID); ok {
			return illegal("tool call %s already answered", a.ToolCallID)
		}
		s.Turn.Pending = append(s.Turn.Pending, *a)

	case ApprovalAnswered:
		a := f.Answer
		switch {
		case a == nil:
			return refuse(ErrBadAnswer, "no answer")
		case a.Decision != Approve && a.Decision != Deny:
			return refuse(ErrBadAnswer, "unknown decision %q", a.Decision)
		}
		if err := openTurn(ErrNotPending); err != nil {
			return err
		}
		if s.Status != Suspended || s.Turn.Cause != CauseApproval {
			return refuse(ErrNotPending, "the turn is not waiting for approval")
		}
		i := slices.IndexFunc(s.Turn.Pending, func(p Approval) bool { return p.ID == a.ApprovalID })
		if i < 0 {
			return refuse(ErrNotPending, "approval %q is not pending", a.ApprovalID)
		}
		if a.ToolCallID != s.Turn.Pending[i].ToolCallID {
			return illegal("approval %q is for tool call %s, not %s", a.ApprovalID, s.Turn.Pending[i].ToolCallID, a.ToolCallID)
		}
		s.Turn.Pending = slices.Delete(s.Turn.Pending, i, i+1)
		ans := *a
		ans.By = f.Actor.ID
		s.Turn.Answers = append(s.Turn.Answers, ans)

	case ExecutionStarted:
		if err := needTurn(); err != nil {
			return err
		}
		if s.Status != Running {
			return illegal("only a running turn executes tools")
		}
		e := f.Execution
		if e == nil || e.ID == "" || e.ToolCallID == "" {
			return illegal("execution not named")
		}
		if err := s.Turn.nextExecution(*e); err != nil {
			return illegal("%v", err)
		}
		s.Turn.Executions = append(s.Turn.Executions, *e)

	case ExecutionVerdict:
		if f.Settled == nil || (f.Settled.Verdict != Rerun && f.Settled.Verdict != Abandon) {
			return refuse(ErrBadAnswer, "no verdict: want rerun or abandon")
		}
		v := *f.Settled // a copy: the fact is the caller's and must not change
		if err := openTurn(ErrNotPending); err != nil {
			return err
		}
		if s.Status != Suspended || s.Turn.Uncertain == nil || s.Turn.Uncertain.ID != v.ExecutionID {
			return refuse(ErrNotPending, "execution %q awaits no verdict", v.ExecutionID)
		}
		v.ToolCallID = s.Turn.Uncertain.ToolCallID
		s.Turn.Verdicts = append(s.Turn.Verdicts, v)
		s.Turn.Uncertain = nil

	case ScheduleSet:
		if f.Schedule == nil || f.Schedule.Text == "" {
			return illegal("no schedule or no text")
		}
		if _, err := ParseCron(f.Schedule.Cron); err != nil {
			return illegal("%v", err)
		}
		sc := *f.Schedule
		sc.From = f.Time
		s.Schedule = &sc

	case UsageRecorded:
		switch {
		case f.Turn == "" || f.Usage == nil || *f.Usage == (Usage{}):
			return illegal("no turn or no usage")
		case s.Turn != nil && s.Turn.ID == f.Turn:
			return illegal("the open turn records its usage as it suspends or ends")
		}
		s.Usage = s.Usage.Add(*f.Usage)

	case ScheduleCleared:
		if s.Schedule == nil {
			return illegal("no schedule to clear")
		}
		s.Schedule = nil

	case ScheduleFired:
		if s.Schedule == nil {
			return illegal("no schedule to fire")
		}
		if f.Wake.IsZero() || !f.Wake.Equal(s.Schedule.Next()) {
			return illegal("occurrence %v is not the schedule's next", f.Wake)
		}
		// Occurrences missed while busy collapse into this one.
		s.Schedule.From = f.Time

	case ContextCompacted:
		if err := needTurn(); err != nil {
			return err
		}
		if s.Status != Running {
			return illegal("only a running turn compacts its context")
		}
		if f.Snapshot == "" || f.Compaction == nil {
			return illegal("no compacted snapshot or no compaction")
		}
		if f.Compaction.Messages < 1 || f.Compaction.Turns < 1 || f.Compaction.Kept < 0 {
			return illegal("a compaction replaces %d messages of %d turns, keeping %d", f.Compaction.Messages, f.Compaction.Turns, f.Compaction.Kept)
		}
		s.Usage = s.Usage.Add(f.Compaction.Usage)
		s.Snapshot, s.SnapshotSeq = f.Snapshot, f.Seq
		s.Compactions++

	case TimerSet:
		if err := needTurn(); err != nil {
			return err
		}
		if f.Wake.IsZero() {
			return illegal("no wake time")
		}
		if s.Status != Suspended || s.Turn.Cause != CauseTimer {
			return illegal("the turn is not suspended on a timer")
		}
		s.Turn.Wake, s.Turn.TimerSet = f.Wake, true

	case LimitsRaised:
		if err := needTurn(); err != nil {
			return err
		}
		if f.Raise == nil {
			return illegal("no caps")
		}
		if s.Status != Suspended || s.Turn.Cause != CauseLimit {
			return illegal("the turn is not suspended for a limit")
		}
		s.Turn.Caps = s.Turn.Caps.Over(f.Raise.Turn)
		s.Caps = s.Caps.Over(f.Raise.Session)
		s.Turn.Raised = true

	case TurnCompleted, TurnFailed:
		if err := needTurn(); err != nil {
			return err
		}
		if s.Status != Running {
			return illegal("only a running turn ends this way")
		}
		if f.Type == TurnFailed && f.Failure == nil {
			return illegal("failure not described")
		}
		s.end(f)

	case TurnCancelled:
		if err := needTurn(); err != nil {
			return err
		}
		s.end(f)

	case TurnInterrupted:
		if err := needTurn(); err != nil {
			return err
		}
		if !s.Turn.Interrupt {
			return illegal("no message interrupted the turn")
		}
		s.end(f)

	default:
		return illegal("unknown fact type")
	}
	s.LastSeq = f.Seq
	s.Updated = f.Time
	return nil
}

func (s *State) end(f Fact) {
	if f.Usage != nil {
		// The end's usage is the whole turn's: what its suspensions
		// recorded is part of it.
		s.Usage = s.Usage.Add(f.Usage.Sub(s.Turn.Usage))
	}
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
