package reducer

import (
	"time"

	"github.com/baton-run/baton/internal/traceparent"
)

// Appliers for the open turn's lifecycle: start, suspend, resume, compaction, timers, raised limits and the three ends.

// applyTurnStarted checks and folds a fact of type TurnStarted.
func (s turnRules) applyTurnStarted(f Fact) error {
	if s.Status != Idle {
		return s.illegal(f, "a turn is already open")
	}
	if f.Turn == "" || f.Stream == "" {
		return s.illegal(f, "turn or stream not named")
	}
	if len(s.Inbox) == 0 {
		return s.illegal(f, "no message to answer")
	}
	if f.Trace != "" && !traceparent.Valid(f.Trace) {
		return s.illegal(f, "trace %q is not a traceparent", f.Trace)
	}
	s.Turn = &Turn{ID: f.Turn, Stream: f.Stream, Started: f.Time, Since: f.Time,
		Messages: s.Inbox, Lease: f.Lease, Invocations: 1, Trace: f.Trace}
	s.Turn.versioned(f)
	s.Inbox = nil
	s.Status = Running
	s.Reported = false
	return nil
}

// applyTurnSuspended checks and folds a fact of type TurnSuspended.
func (s turnRules) applyTurnSuspended(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn suspends")
	}
	if !f.Cause.fault() && f.Cause != CauseTimer && (f.Faults != 0 || !f.Wake.IsZero()) {
		return s.illegal(f, "a %s suspension carries a fault count or wake time", f.Cause)
	}
	if f.Cause == CauseTimer && (f.Wake.IsZero() || f.Faults != 0) {
		return s.illegal(f, "a timer suspension needs a wake time and no fault count")
	}
	if f.Faults < 0 {
		return s.illegal(f, "negative fault count %d", f.Faults)
	}
	if f.Limit != nil {
		if f.Cause != CauseLimit {
			return s.illegal(f, "a %s suspension names a spend cap", f.Cause)
		}
		if err := f.Limit.Check(); err != nil {
			return s.illegal(f, "%v", err)
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
	case CauseBlocked:
		if f.Block == nil {
			return s.illegal(f, "suspended as blocked without the block")
		}
		s.Turn.Faults, s.Turn.Block = 0, f.Block
	case CauseApproval:
		if len(s.Turn.Pending) == 0 {
			return s.illegal(f, "suspended for approval with none pending")
		}
		s.Turn.Faults = 0
	case CauseChildren:
		if err := (childRules{s.State}).suspendForChildren(f); err != nil {
			return err
		}
	case CauseCallback:
		if err := (callbackRules{s.State}).suspendForCallbacks(f); err != nil {
			return err
		}
	case CauseUncertain:
		if f.Execution == nil {
			return s.illegal(f, "suspended as uncertain without the execution")
		}
		if err := s.Turn.openExecution(*f.Execution); err != nil {
			return s.illegal(f, "%v", err)
		}
		e := *f.Execution
		s.Turn.Uncertain = &e
		s.Turn.Faults = 0
	default:
		return s.illegal(f, "unknown cause %q", f.Cause)
	}
	s.Status, s.Turn.Cause, s.Turn.Since, s.Turn.Lease = Suspended, f.Cause, f.Time, time.Time{}
	return nil
}

// applyTurnResumed checks and folds a fact of type TurnResumed.
func (s turnRules) applyTurnResumed(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	switch s.Status {
	case Suspended:
		if len(s.Turn.Pending) > 0 {
			return s.illegal(f, "%d approval(s) still pending", len(s.Turn.Pending))
		}
		if s.Turn.Uncertain != nil {
			return s.illegal(f, "execution %s awaits a verdict", s.Turn.Uncertain.ID)
		}
		if s.Turn.Cause == CauseChildren && s.Turn.awaits() {
			return s.illegal(f, "%d of %d children still running", len(s.Turn.Children)-s.Turn.ended(), len(s.Turn.Children))
		}
	case Running:
		// Taking over from an invocation that died: only once its lease ran out.
		if !f.Time.After(s.Turn.Lease) {
			return s.illegal(f, "the running invocation's lease holds until %s", s.Turn.Lease.Format(time.RFC3339Nano))
		}
	}
	s.Status, s.Turn.Cause, s.Turn.Since, s.Turn.Lease = Running, "", f.Time, f.Lease
	s.Turn.Limit = Limit{}
	s.Turn.Wake = time.Time{}
	s.Turn.Block = nil
	s.Turn.Invocations++
	s.Turn.versioned(f)
	return nil
}

// applyContextCompacted checks and folds a fact of type ContextCompacted.
func (s turnRules) applyContextCompacted(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn compacts its context")
	}
	if f.Snapshot == "" || f.Compaction == nil {
		return s.illegal(f, "no compacted snapshot or no compaction")
	}
	if f.Compaction.Messages < 1 || f.Compaction.Turns < 1 || f.Compaction.Kept < 0 {
		return s.illegal(f, "a compaction replaces %d messages of %d turns, keeping %d", f.Compaction.Messages, f.Compaction.Turns, f.Compaction.Kept)
	}
	s.Usage = s.Usage.Add(f.Compaction.Usage)
	s.Snapshot, s.SnapshotSeq = f.Snapshot, f.Seq
	s.Compactions++
	return nil
}

// applyTimerSet checks and folds a fact of type TimerSet.
func (s turnRules) applyTimerSet(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if f.Wake.IsZero() {
		return s.illegal(f, "no wake time")
	}
	if s.Status != Suspended || s.Turn.Cause != CauseTimer {
		return s.illegal(f, "the turn is not suspended on a timer")
	}
	s.Turn.Wake, s.Turn.TimerSet = f.Wake, true
	return nil
}

// applyLimitsRaised checks and folds a fact of type LimitsRaised.
func (s turnRules) applyLimitsRaised(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if f.Raise == nil {
		return s.illegal(f, "no caps")
	}
	if s.Status != Suspended || s.Turn.Cause != CauseLimit {
		return s.illegal(f, "the turn is not suspended for a limit")
	}
	s.Turn.Caps = s.Turn.Caps.Over(f.Raise.Turn)
	s.Caps = s.Caps.Over(f.Raise.Session)
	s.Turn.Raised = true
	return nil
}

// applyTurnEnded checks and folds a fact of type TurnCompleted or TurnFailed.
func (s turnRules) applyTurnEnded(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn ends this way")
	}
	if f.Type == TurnFailed && f.Failure == nil {
		return s.illegal(f, "failure not described")
	}
	s.end(f)
	return nil
}

// applyTurnCancelled checks and folds a fact of type TurnCancelled.
func (s turnRules) applyTurnCancelled(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	s.end(f)
	return nil
}

// applyTurnInterrupted checks and folds a fact of type TurnInterrupted.
func (s turnRules) applyTurnInterrupted(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if !s.Turn.Interrupt {
		return s.illegal(f, "no message interrupted the turn")
	}
	s.end(f)
	return nil
}
