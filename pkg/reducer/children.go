package reducer

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Sub-agents: a turn's tool call may start a child session (child.started),
// whose end is delivered back to the turn as the call's result
// (child.ended); the turn waits for its children suspended as
// CauseChildren. A child session names its parent in its session.created
// fact (Fact.Parent), and records, with child.reported, that its last
// turn's end reached the parent. A turn may also hand the session to
// another agent (agent.handed-off), which answers from then on.

// The facts of sub-agents and hand-offs.
const (
	// ChildStarted: the open turn starts a child session for one of its
	// tool calls (Fact.Child: its id, the call, the agent, the task). It is
	// recorded before the child is created, so a retry finds the same
	// child: the id is ChildID's, and the creation is conditional.
	ChildStarted Type = "child.started"
	// ChildEnded: a child's turn ended; Fact.Child carries how, its final
	// answer or error, and its session's usage, which counts in this
	// session's usage. It is the call's result, recorded once: a second
	// one for the same call is refused with ErrNotPending.
	ChildEnded Type = "child.ended"
	// ChildApproval: a child of the open turn waits for an approval
	// (Fact.Child names it, Fact.Approval is the child's request). It
	// lets the parent show the request; only the child can take the
	// answer, under the child's approval id, through the child's checks.
	ChildApproval Type = "child.approval"
	// ChildReported (in the child): the end of its last turn was
	// delivered to its parent.
	ChildReported Type = "child.reported"
	// ChildShown (in the child): its pending approval requests reached
	// its parent and on up to the root (child.approval there), so every
	// ancestor's stream can show them. Until then the child waits with
	// ReasonShow, and the tick re-sends its wake as lost.
	ChildShown Type = "child.shown"
	// ChildCancelled: a child an ended turn left running (an Orphan,
	// Fact.Child names it, Fact.Turn the turn) was cancelled, or had ended
	// already: nothing of the family runs for that turn any more. Its
	// Fact.Child.Usage, the child session's, counts in this session's.
	ChildCancelled Type = "child.cancelled"
	// HandedOff: the running turn handed the session to Fact.Agent, which
	// runs the rest of the turn and the session's later turns.
	HandedOff Type = "agent.handed-off"
)

// CauseChildren: the turn waits for the child sessions its tool calls
// started; a child's end resumes it (all of them, or each, as the
// suspension's Each says).
const CauseChildren Cause = "children"

// ReasonChildren: suspended for children that have not ended (nothing to
// do until a child.ended); ReasonReport: a child session whose last turn
// ended and was not yet delivered to its parent (its wake reports it);
// ReasonCascade: idle, with children its ended turns left running
// (Orphans) still to cancel (its wake cancels them); ReasonShow: a child
// session suspended with approval requests its ancestors were not yet
// shown (its wake shows them).
const (
	ReasonChildren Reason = "children"
	ReasonReport   Reason = "report"
	ReasonCascade  Reason = "cascade"
	ReasonShow     Reason = "show"
)

// Report: deliver the end of a child session's last turn to its parent.
// Cascade: cancel the children an ended turn left running. Show: show a
// child's pending approval requests to its ancestors.
const (
	Report  Action = 100
	Cascade Action = 101
	Show    Action = 102
)

// Orphan is a child session a turn left running when it ended (any way:
// completed, failed, cancelled, interrupted): the turn no longer waits for
// it, and it is to be cancelled. The ending fact itself records that, so a
// crash right after it loses nothing: the session waits with
// ReasonCascade until child.cancelled names every orphan.
type Orphan struct {
	ID    string `json:"id"`
	Turn  string `json:"turn"`
	Ended Type   `json:"ended"` // how the turn ended
}

// Parent names the turn and tool call a child session answers, and how
// deep it is: a top-level session's children have depth 1.
type Parent struct {
	Session    string `json:"session"`
	Turn       string `json:"turn"`
	ToolCallID string `json:"toolCallId"`
	Depth      int    `json:"depth"`
}

// Child is a child session started by a tool call, and once it ended,
// how: Status is the ending fact's type (turn.completed, turn.failed,
// turn.cancelled, turn.interrupted), Output the child's final answer, Error
// why it did not complete, and Usage its session's usage.
type Child struct {
	ID         string `json:"id"`
	ToolCallID string `json:"toolCallId"`
	Agent      string `json:"agent"`
	Task       string `json:"task,omitempty"`
	Status     Type   `json:"status,omitempty"`
	Output     string `json:"output,omitempty"`
	Error      string `json:"error,omitempty"`
	Usage      Usage  `json:"usage,omitzero"`
}

// ChildRequest is a child's approval request as its parent shows it.
// Child is the turn's child the request came through; Session the session
// that asked, when it is not Child itself but one of Child's descendants
// (a grandchild's request, shown up the chain to the root).
type ChildRequest struct {
	Child    string   `json:"child"`
	Session  string   `json:"session,omitempty"`
	Approval Approval `json:"approval"`
}

// Asker is the session that asked for the approval: the one whose reducer
// decides an answer to it.
func (r ChildRequest) Asker() string {
	if r.Session != "" {
		return r.Session
	}
	return r.Child
}

// ChildRequest returns the request of a child of the turn for approval id.
func (t *Turn) ChildRequest(approvalID string) (ChildRequest, bool) {
	i := slices.IndexFunc(t.Requests, func(r ChildRequest) bool { return r.Approval.ID == approvalID })
	if i < 0 {
		return ChildRequest{}, false
	}
	return t.Requests[i], true
}

// Ended reports whether the child's end was recorded.
func (c Child) Ended() bool { return c.Status != "" }

// Failed reports whether the child ended other than completed: its result
// is an error result.
func (c Child) Failed() bool { return c.Ended() && c.Status != TurnCompleted }

// ChildID is the id of the child session that tool call call of turn turn
// of session parent starts: derived from the three, so every retry of the
// start names the same child.
func ChildID(parent, turn, call string) string {
	h := sha256.Sum256([]byte(parent + "\x00" + turn + "\x00" + call))
	return "s_c" + hex.EncodeToString(h[:13])
}

// Depth is how deep the session is: 0 for a top-level session.
func (s State) Depth() int {
	if s.Parent == nil {
		return 0
	}
	return s.Parent.Depth
}

// Child returns the child a tool call of the turn started.
func (t *Turn) Child(toolCallID string) (Child, bool) {
	i := slices.IndexFunc(t.Children, func(c Child) bool { return c.ToolCallID == toolCallID })
	if i < 0 {
		return Child{}, false
	}
	return t.Children[i], true
}

// ended counts the turn's children that ended.
func (t *Turn) ended() int {
	n := 0
	for _, c := range t.Children {
		if c.Ended() {
			n++
		}
	}
	return n
}

// awaits reports whether a turn suspended for its children still waits:
// for all to end, or, with Each, for one more to end since it suspended.
func (t *Turn) awaits() bool {
	n := t.ended()
	if len(t.Requests) > t.Shown {
		return false // a child's approval request is to be shown
	}
	if t.Each {
		return n <= t.Seen && n < len(t.Children)
	}
	return n < len(t.Children)
}

func init() {
	appliers[ChildStarted] = rule(childRules.applyChildStarted)
	appliers[ChildEnded] = rule(childRules.applyChildEnded)
	appliers[ChildReported] = rule(childRules.applyChildReported)
	appliers[ChildShown] = rule(childRules.applyChildShown)
	appliers[ChildApproval] = rule(childRules.applyChildApproval)
	appliers[ChildCancelled] = rule(childRules.applyChildCancelled)
	appliers[HandedOff] = rule(childRules.applyHandedOff)
}

// applyChildStarted checks and folds a fact of type ChildStarted.
func (s childRules) applyChildStarted(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn starts children")
	}
	c := f.Child
	if c == nil || c.ID == "" || c.ToolCallID == "" || c.Agent == "" || c.Ended() {
		return s.illegal(f, "child not named, or named as ended")
	}
	for _, x := range s.Turn.Children {
		if x.ID == c.ID || x.ToolCallID == c.ToolCallID {
			return s.illegal(f, "tool call %s already started child %s", c.ToolCallID, x.ID)
		}
	}
	s.Turn.Children = append(s.Turn.Children, *c)
	return nil
}

// applyChildEnded checks and folds a fact of type ChildEnded.
func (s childRules) applyChildEnded(f Fact) error {
	c := f.Child
	if c == nil || !c.Ended() || c.Usage.negative() {
		return s.refuse(f, ErrBadAnswer, "no child end, or a negative usage")
	}
	if err := s.openTurn(f, ErrNotPending); err != nil {
		return err
	}
	i := slices.IndexFunc(s.Turn.Children, func(x Child) bool { return x.ID == c.ID })
	switch {
	case i < 0:
		return s.refuse(f, ErrNotPending, "child %s was not started by the turn", c.ID)
	case s.Turn.Children[i].Ended():
		return s.refuse(f, ErrNotPending, "child %s already ended", c.ID)
	case c.ToolCallID != s.Turn.Children[i].ToolCallID:
		return s.illegal(f, "child %s answers tool call %s, not %s", c.ID, s.Turn.Children[i].ToolCallID, c.ToolCallID)
	}
	was := s.Turn.Children[i]
	was.Status, was.Output, was.Error, was.Usage = c.Status, c.Output, c.Error, c.Usage
	s.Turn.Children[i] = was
	s.Usage = s.Usage.Add(c.Usage)
	return nil
}

// applyChildApproval checks and folds a fact of type ChildApproval.
func (s childRules) applyChildApproval(f Fact) error {
	if f.Child == nil || f.Approval == nil || f.Approval.ID == "" {
		return s.illegal(f, "no child or no approval")
	}
	if err := s.openTurn(f, ErrNotPending); err != nil {
		return err
	}
	if c, ok := s.Turn.Child(f.Child.ToolCallID); !ok || c.ID != f.Child.ID || c.Ended() {
		return s.refuse(f, ErrNotPending, "child %s of tool call %s is not running for the turn", f.Child.ID, f.Child.ToolCallID)
	}
	if _, ok := s.Turn.ChildRequest(f.Approval.ID); ok {
		return s.refuse(f, ErrNotPending, "approval %s of child %s already shown", f.Approval.ID, f.Child.ID)
	}
	r := ChildRequest{Child: f.Child.ID, Approval: *f.Approval}
	if f.Asker != "" && f.Asker != f.Child.ID {
		r.Session = f.Asker
	}
	s.Turn.Requests = append(s.Turn.Requests, r)
	return nil
}

// applyChildCancelled checks and folds a fact of type ChildCancelled.
func (s childRules) applyChildCancelled(f Fact) error {
	if f.Child == nil || f.Child.ID == "" || f.Child.Usage.negative() {
		return s.illegal(f, "no child named, or a negative usage")
	}
	i := slices.IndexFunc(s.Orphans, func(o Orphan) bool { return o.ID == f.Child.ID && o.Turn == f.Turn })
	if i < 0 {
		return s.refuse(f, ErrNotPending, "child %s of turn %s is not left to cancel", f.Child.ID, f.Turn)
	}
	s.Orphans = slices.Delete(s.Orphans, i, i+1)
	// The child's spend, which no child.ended brought, counts here.
	s.Usage = s.Usage.Add(f.Child.Usage)
	return nil
}

// orphan records, as the open turn ends (how), the children it leaves
// running.
func (s childRules) orphan(how Type) {
	for _, c := range s.Turn.Children {
		if !c.Ended() {
			s.Orphans = append(s.Orphans, Orphan{ID: c.ID, Turn: s.Turn.ID, Ended: how})
		}
	}
}

// applyChildReported checks and folds a fact of type ChildReported.
func (s childRules) applyChildReported(f Fact) error {
	if s.Parent == nil || s.Status != Idle || s.Turns == 0 || s.Reported {
		return s.refuse(f, ErrNotPending, "no ended turn of a child session waits to be reported")
	}
	s.Reported = true
	return nil
}

// applyChildShown checks and folds a fact of type ChildShown.
func (s childRules) applyChildShown(f Fact) error {
	if !s.toShow() {
		return s.refuse(f, ErrNotPending, "no approval request of a child session waits to be shown")
	}
	s.Turn.ShownUp = true
	return nil
}

// toShow reports whether s is a child session suspended with approval
// requests its ancestors were not shown.
func (s childRules) toShow() bool {
	return s.Parent != nil && s.Status == Suspended && s.Turn != nil && len(s.Turn.Pending) > 0 && !s.Turn.ShownUp
}

// applyHandedOff checks and folds a fact of type HandedOff.
func (s childRules) applyHandedOff(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn hands off")
	}
	if f.Agent == "" || f.Agent == s.Agent {
		return s.illegal(f, "a hand-off names another agent")
	}
	s.Agent = f.Agent
	return nil
}

// suspendForChildren checks a suspension for children: the turn has
// children that have not all ended.
func (s childRules) suspendForChildren(f Fact) error {
	if len(s.Turn.Children) == 0 {
		return s.illegal(f, "suspended for children with none started")
	}
	s.Turn.Each, s.Turn.Seen, s.Turn.Shown = f.Each, s.Turn.ended(), len(s.Turn.Requests)
	s.Turn.Faults = 0
	return nil
}
