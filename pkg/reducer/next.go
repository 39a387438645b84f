package reducer

import (
	"fmt"
	"time"
)

// Action is what a session needs done next.
type Action int

// Actions, as Next decides them.
const (
	None   Action = iota // nothing, for now
	Start                // idle with messages waiting: start a turn
	Resume               // a suspended turn's wait is over: resume it
	Reap                 // the running invocation's lease ran out: it died
	Expire               // an approval request is past its expiry: deny it
	Rewake               // the wake the session waits for is overdue: send it again
	Post                 // a schedule's occurrence is due: post its message
)

func (a Action) String() string {
	switch a {
	case None:
		return "none"
	case Start:
		return "start"
	case Resume:
		return "resume"
	case Reap:
		return "reap"
	case Expire:
		return "expire"
	case Rewake:
		return "rewake"
	case Post:
		return "post"
	case Report:
		return "report"
	case Cascade:
		return "cascade"
	case Show:
		return "show"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Reason is what a session waits for. It is stored in the session's head
// (the index the tick pages), so its values are stable strings; "lease",
// "approval", "wake" and "inbox" are also what heads written before Reason
// existed hold.
type Reason string

// Reasons.
const (
	NoReason       Reason = ""         // idle, nothing waiting
	ReasonLease    Reason = "lease"    // running until its lease runs out
	ReasonApproval Reason = "approval" // approvals pending, the earliest expiring at Due
	ReasonWake     Reason = "wake"     // suspended, only its wake stands between it and a resume
	ReasonFault    Reason = "fault"    // suspended for a model or store fault, its delayed wake due at Due
	ReasonInbox    Reason = "inbox"    // idle with messages waiting for a turn
	ReasonOperator Reason = "operator" // an approval that never expires, or an execution awaiting a verdict
	ReasonTimer    Reason = "timer"    // suspended on a timer (wait_until) until Due
	ReasonSchedule Reason = "schedule" // idle with a schedule whose next occurrence is Due
)

// Wake reports whether a session with this reason waits for a wake.
func (r Reason) Wake() bool {
	return r == ReasonWake || r == ReasonFault || r == ReasonInbox || r == ReasonTimer || r == ReasonReport || r == ReasonCascade ||
		r == ReasonShow || r == ReasonCallback
}

// WakeSkew is how early a fault suspension's delayed wake may arrive and
// still resume the turn, for clocks that disagree a little.
const WakeSkew = 200 * time.Millisecond

// Need is what a session needs next and why.
type Need struct {
	Action Action
	Reason Reason
	// Due is when the session next needs looking at, whatever the time
	// now; zero when only an operator or a new message can move it. It is
	// what the head's byDue index holds.
	Due time.Time
}

// Lost reports whether a session that waits for a wake has waited longer
// than grace past Due, so its wake must have been lost. A timer's wake is
// the tick's to send (a delayed wake reaches at most wake.MaxDelay ahead),
// so a timer counts as lost as soon as it is due. A grace of zero or less
// never takes a wake as lost: the caller is the wake.
func (n Need) Lost(now time.Time, grace time.Duration) bool {
	switch {
	case !n.Reason.Wake() || grace <= 0:
		return false
	case n.Reason == ReasonTimer || n.Reason == ReasonCallback:
		return !now.Before(n.Due)
	}
	return now.Sub(n.Due) > grace
}

// Next decides what the session needs at now. It is the one place that
// decision is made; the worker (grace 0: it is handling the wake), the
// runner's resume guard, the tick (its grace) and the head's index (Due and
// Reason) all use it.
//
//   - running: Reap once now is past the lease, else None until then.
//   - suspended for approval: Expire once now is past the earliest
//     expiry; an approval that never expires waits for the operator.
//   - suspended for an uncertain execution: None until the verdict.
//   - suspended for a spend limit: None until an operator raises it.
//   - suspended with nothing pending (budget, a reaped lease, answered
//     approvals, a given verdict, a fault): Resume, due since the last
//     update. A fault suspension with a delayed wake is due at Turn.Wake
//     and is not resumed before it (less WakeSkew): an early wake, such as
//     a message's, must not spend one of the turn's fault suspensions.
//   - suspended on a timer: Resume from Turn.Wake (less WakeSkew), None
//     before it; the tick (grace > 0) sends its wake once due: Rewake.
//   - suspended for callbacks: Resume once every callback ended, or from
//     the earliest deadline (less WakeSkew), when the turn times it out;
//     the tick sends its wake once due, as a timer's.
//   - idle with children its ended turns left running (Orphans):
//     Cascade, due since the last update; before a report or a start.
//   - idle with messages waiting: Start, due since the last update.
//   - idle with a schedule: Post from its next occurrence (a busy
//     session's occurrences wait until it is idle, and collapse into one).
//   - waiting for a wake longer than grace past Due: Rewake.
func (s State) Next(now time.Time, grace time.Duration) Need {
	n := s.need()
	switch n.Reason {
	case ReasonLease:
		if now.After(n.Due) {
			n.Action = Reap
		}
	case ReasonApproval:
		if now.After(n.Due) {
			n.Action = Expire
		}
	case ReasonSchedule:
		if !now.Before(n.Due) {
			n.Action = Post
		}
	case ReasonWake, ReasonFault, ReasonInbox, ReasonTimer, ReasonReport, ReasonCascade, ReasonShow, ReasonCallback:
		switch {
		case n.Lost(now, grace):
			n.Action = Rewake
		case n.Reason == ReasonCascade:
			n.Action = Cascade
		case n.Reason == ReasonShow:
			n.Action = Show
		case n.Reason == ReasonReport:
			n.Action = Report
		case n.Reason == ReasonInbox:
			n.Action = Start
		case (n.Reason == ReasonFault || n.Reason == ReasonTimer || n.Reason == ReasonCallback) && now.Add(WakeSkew).Before(n.Due):
			// The delayed wake is still to come.
		default:
			n.Action = Resume
		}
	}
	return n
}

// need is what the session waits for, whatever the time.
func (s State) need() Need {
	t := s.Turn
	switch {
	case s.Status == Running && t != nil:
		return Need{Reason: ReasonLease, Due: t.Lease}
	case childRules{&s}.toShow():
		// Its ancestors are to show the requests first; then it waits
		// for the answer like any session.
		return Need{Reason: ReasonShow, Due: s.Updated}
	case s.Status == Suspended && t != nil && len(t.Pending) > 0:
		// The earliest expiry; an approval without one waits for the operator.
		var first time.Time
		for _, p := range t.Pending {
			if !p.Expires.IsZero() && (first.IsZero() || p.Expires.Before(first)) {
				first = p.Expires
			}
		}
		if first.IsZero() || t.Cause != CauseApproval {
			// Only an answer can move it; expiry denies only what a
			// suspension for approval waits for.
			return Need{Reason: ReasonOperator}
		}
		return Need{Reason: ReasonApproval, Due: first}
	case s.Status == Suspended && t != nil && t.Uncertain != nil:
		return Need{Reason: ReasonOperator}
	case s.Status == Suspended && t != nil && t.Cause == CauseLimit && !t.Raised:
		return Need{Reason: ReasonOperator}
	case s.Status == Suspended && t != nil && t.Cause == CauseChildren && t.awaits():
		return Need{Reason: ReasonChildren}
	case s.Status == Suspended && t != nil && t.Cause == CauseTimer:
		return Need{Reason: ReasonTimer, Due: t.Wake}
	case s.Status == Suspended && t != nil && t.Cause == CauseCallback:
		if n, first := t.Awaiting(); n > 0 {
			// The last end, or the first deadline, resumes it.
			return Need{Reason: ReasonCallback, Due: first}
		}
		return Need{Reason: ReasonWake, Due: s.Updated}
	case s.Status == Suspended && t != nil && t.Wake.After(s.Updated):
		return Need{Reason: ReasonFault, Due: t.Wake}
	case s.Status == Suspended && t != nil:
		return Need{Reason: ReasonWake, Due: s.Updated}
	case s.Status == Idle && len(s.Orphans) > 0:
		return Need{Reason: ReasonCascade, Due: s.Updated}
	case s.Status == Idle && s.Parent != nil && s.Turns > 0 && !s.Reported:
		return Need{Reason: ReasonReport, Due: s.Updated}
	case s.Status == Idle && len(s.Inbox) > 0:
		return Need{Reason: ReasonInbox, Due: s.Updated}
	case s.Status == Idle && s.Schedule != nil:
		if due := s.Schedule.Next(); !due.IsZero() {
			return Need{Reason: ReasonSchedule, Due: due}
		}
	}
	return Need{}
}
