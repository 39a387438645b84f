package operator

import (
	"context"
	"slices"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/pkg/reducer"
)

// childPending lists in s the approval requests the open turn's children
// showed it (child.approval) that are still pending in the session that
// asked, read from that session's own facts. A session that cannot be
// read is left out, and logged.
func (a *sessionRoutes) childPending(ctx context.Context, st reducer.State, s *api.Session) {
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
		s.ChildPending = append(s.ChildPending, api.ChildApproval{Child: r.Child, Session: asker, ApprovalID: r.Approval.ID,
			ToolCallID: r.Approval.ToolCallID, Tool: r.Approval.Tool, Expires: r.Approval.Expires})
	}
}
