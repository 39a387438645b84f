package operator

import (
	"context"
	"slices"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

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

// childPending lists in s the approval requests the open turn's children
// showed it (child.approval) that are still pending in the session that
// asked, read from that session's own facts. A session that cannot be
// read is left out, and logged.
func (a *api) childPending(ctx context.Context, st reducer.State, s *Session) {
	t := st.Turn
	if t == nil || len(t.Requests) == 0 {
		return
	}
	states := map[string]*reducer.State{}
	for _, r := range t.Requests {
		if i := slices.IndexFunc(t.Children, func(c reducer.Child) bool { return c.ID == r.Child }); i < 0 || t.Children[i].Ended() {
			continue
		}
		asker := r.Asker()
		cst, ok := states[asker]
		if !ok {
			sess, err := a.sessions.Load(ctx, asker)
			if err != nil {
				a.log.WarnContext(ctx, "operator: read a child session for its approvals", "child", r.Child, "session", asker, "err", err)
			} else {
				cst = &sess.State
			}
			states[asker] = cst
		}
		if cst == nil || cst.Turn == nil || !slices.ContainsFunc(cst.Turn.Pending, func(p reducer.Approval) bool { return p.ID == r.Approval.ID }) {
			continue
		}
		s.ChildPending = append(s.ChildPending, ChildApproval{Child: r.Child, Session: asker, ApprovalID: r.Approval.ID,
			ToolCallID: r.Approval.ToolCallID, Tool: r.Approval.Tool, Expires: r.Approval.Expires})
	}
}
