package children

import (
	"context"
	"log/slog"
	"slices"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/pkg/reducer"
)

// Pending is what the operator API's session view lists of the approval
// requests the open turn of st's children showed it (child.approval) that
// are still pending in the session that asked, read from that session's
// own facts with load. A session that cannot be read is left out, and
// logged.
func Pending(ctx context.Context, st reducer.State, load func(ctx context.Context, id string) (reducer.State, error), log *slog.Logger) []api.ChildApproval {
	t := st.Turn
	if t == nil || len(t.Requests) == 0 {
		return nil
	}
	var out []api.ChildApproval
	states := map[string]*reducer.State{}
	for _, r := range t.Requests {
		if i := slices.IndexFunc(t.Children, func(c reducer.Child) bool { return c.ID == r.Child }); i < 0 || t.Children[i].Ended() {
			continue
		}
		asker := r.Asker()
		cst, ok := states[asker]
		if !ok {
			st, err := load(ctx, asker)
			if err != nil {
				log.WarnContext(ctx, "operator: read a child session for its approvals", "child", r.Child, "session", asker, "err", err)
			} else {
				cst = &st
			}
			states[asker] = cst
		}
		if cst == nil || cst.Turn == nil || !slices.ContainsFunc(cst.Turn.Pending, func(p reducer.Approval) bool { return p.ID == r.Approval.ID }) {
			continue
		}
		out = append(out, api.ChildApproval{Child: r.Child, Session: asker, ApprovalID: r.Approval.ID,
			ToolCallID: r.Approval.ToolCallID, Tool: r.Approval.Tool, Expires: r.Approval.Expires})
	}
	return out
}
