package reducer

import (
	"slices"

	"github.com/baton-run/baton/internal/guard"
)

// Appliers for tool calls: approvals and their answers, executions and their verdicts.

// applyApprovalRequested checks and folds a fact of type ApprovalRequested.
func (s toolRules) applyApprovalRequested(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn requests approval")
	}
	a := f.Approval
	if a == nil || a.ID == "" || a.ToolCallID == "" {
		return s.illegal(f, "approval not named")
	}
	for _, p := range s.Turn.Pending {
		if p.ID == a.ID || p.ToolCallID == a.ToolCallID {
			return s.illegal(f, "approval %s already pending", a.ID)
		}
	}
	// An answered call is asked again only for an edit that must be, or
	// for a tool that changed since it was approved (its print differs).
	if ans, ok := s.Turn.Answer(a.ToolCallID); ok && !ans.Reapprove() && !(a.Print != "" && ans.Print != "" && a.Print != ans.Print) {
		return s.illegal(f, "tool call %s already answered", a.ToolCallID)
	}
	p := *a
	p.Requested = f.Time
	s.Turn.Pending = append(s.Turn.Pending, p)
	s.Turn.ShownUp = false
	return nil
}

// applyApprovalAnswered checks and folds a fact of type ApprovalAnswered.
func (s toolRules) applyApprovalAnswered(f Fact) error {
	a := f.Answer
	if a == nil {
		return s.refuse(f, ErrBadAnswer, "no answer")
	}
	if err := a.check(); err != nil {
		return s.refuse(f, ErrBadAnswer, "%v", err)
	}
	if err := s.openTurn(f, ErrNotPending); err != nil {
		return err
	}
	if s.Status != Suspended || s.Turn.Cause != CauseApproval {
		return s.refuse(f, ErrNotPending, "the turn is not waiting for approval")
	}
	i := slices.IndexFunc(s.Turn.Pending, func(p Approval) bool { return p.ID == a.ApprovalID })
	if i < 0 {
		return s.refuse(f, ErrNotPending, "approval %q is not pending", a.ApprovalID)
	}
	if a.ToolCallID != s.Turn.Pending[i].ToolCallID {
		return s.illegal(f, "approval %q is for tool call %s, not %s", a.ApprovalID, s.Turn.Pending[i].ToolCallID, a.ToolCallID)
	}
	p := s.Turn.Pending[i]
	if guard.IsTool(p.Tool) && !(a.Decision == Approve || a.Decision == Deny) {
		return s.refuse(f, ErrBadAnswer, "approval %q is a guardrail's escalation: approve or deny it", a.ApprovalID)
	}
	s.Turn.Pending = slices.Delete(s.Turn.Pending, i, i+1)
	ans := *a
	ans.By, ans.ByKind, ans.Requested, ans.Print = f.Actor.ID, f.Actor.Kind, p.Requested, p.Print
	ans.Original = nil
	if ans.Decision == Edit {
		ans.Original = p.Input
	}
	s.Turn.Answers = append(s.Turn.Answers, ans)
	return nil
}

// applyExecutionStarted checks and folds a fact of type ExecutionStarted.
func (s toolRules) applyExecutionStarted(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn executes tools")
	}
	e := f.Execution
	if e == nil || e.ID == "" || e.ToolCallID == "" {
		return s.illegal(f, "execution not named")
	}
	if err := s.Turn.nextExecution(*e); err != nil {
		return s.illegal(f, "%v", err)
	}
	s.Turn.Executions = append(s.Turn.Executions, *e)
	return nil
}

// applyExecutionVerdict checks and folds a fact of type ExecutionVerdict.
func (s toolRules) applyExecutionVerdict(f Fact) error {
	if f.Settled == nil || (f.Settled.Verdict != Rerun && f.Settled.Verdict != Abandon) {
		return s.refuse(f, ErrBadAnswer, "no verdict: want rerun or abandon")
	}
	v := *f.Settled // a copy: the fact is the caller's and must not change
	if err := s.openTurn(f, ErrNotPending); err != nil {
		return err
	}
	if s.Status != Suspended || s.Turn.Uncertain == nil || s.Turn.Uncertain.ID != v.ExecutionID {
		return s.refuse(f, ErrNotPending, "execution %q awaits no verdict", v.ExecutionID)
	}
	v.ToolCallID = s.Turn.Uncertain.ToolCallID
	s.Turn.Verdicts = append(s.Turn.Verdicts, v)
	s.Turn.Uncertain = nil
	return nil
}
