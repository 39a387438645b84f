package operator

import (
	"context"
	"slices"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// ChildApproval is an approval request of a child session of the open
// turn, pending in the child: answer it here (POST
// /sessions/{child}/approvals/{approvalId}) or in the parent's chat.
type ChildApproval struct {
	Child      string    `json:"child"`
	ApprovalID string    `json:"approvalId"`
	ToolCallID string    `json:"toolCallId"`
	Tool       string    `json:"tool"`
	Expires    time.Time `json:"expires,omitzero"`
}

// childPending lists in s the approval requests the open turn's children
// showed it (child.approval) that are still pending in the child, read
// from each child's own facts. A child that cannot be read is left out,
// and logged.
func (a *api) childPending(ctx context.Context, st reducer.State, s *Session) {
	t := st.Turn
	if t == nil || len(t.Requests) == 0 {
		return
	}
	states := map[string]*reducer.State{}
	for _, r := range t.Requests {
		if c, ok := t.Child(r.Approval.ToolCallID); ok && c.Ended() {
			continue
		}
		cst, ok := states[r.Child]
		if !ok {
			sess, err := a.sessions.Load(ctx, r.Child)
			if err != nil {
				a.log.WarnContext(ctx, "operator: read a child session for its approvals", "child", r.Child, "err", err)
			} else {
				cst = &sess.State
			}
			states[r.Child] = cst
		}
		if cst == nil || cst.Turn == nil || !slices.ContainsFunc(cst.Turn.Pending, func(p reducer.Approval) bool { return p.ID == r.Approval.ID }) {
			continue
		}
		s.ChildPending = append(s.ChildPending, ChildApproval{Child: r.Child, ApprovalID: r.Approval.ID,
			ToolCallID: r.Approval.ToolCallID, Tool: r.Approval.Tool, Expires: r.Approval.Expires})
	}
}
