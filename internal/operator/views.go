package operator

import (
	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/claims/claimsession"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/pkg/reducer"
)

// sessionView is session id, in state st, as the API shows it (without
// what view reads besides: a running turn's usage, its children's
// approvals).
func sessionView(id string, st reducer.State) api.Session {
	s := api.Session{
		ID: id, Agent: st.Agent, Status: st.Status, Created: st.Created, Updated: st.Updated,
		LastSeq: st.LastSeq, Usage: st.Usage, Caps: st.Caps, Compactions: st.Compactions, Turns: st.Turns, Last: st.Last, LastFailure: st.LastFailure,
		Stale: st.Stale,
		Inbox: len(st.Inbox), Pending: []api.Approval{}, Parent: st.Parent, From: st.From, Rewinds: st.Rewinds,
	}
	if sc := st.Schedule; sc != nil {
		s.Schedule = &api.Schedule{Cron: sc.Cron, Text: sc.Text, Next: sc.Next()}
	}
	s.Grants, s.Blocked = claimsession.View(st)
	if t := st.Turn; t != nil {
		s.Turn = &api.Turn{ID: t.ID, Stream: t.Stream, Cause: t.Cause, Started: t.Started, Since: t.Since,
			Lease: t.Lease, Invocations: t.Invocations, Wake: t.Wake, Usage: t.Usage, Caps: t.Caps,
			Steer: len(t.Steer), Interrupt: t.Interrupt, Version: t.Version, Latest: t.Latest, Changed: t.Changed}
		if l := t.Limit; l != (reducer.Limit{}) && st.Status == reducer.Suspended && t.Cause == reducer.CauseLimit {
			s.Turn.Limit = &l
		}
		for _, p := range t.Pending {
			s.Pending = append(s.Pending, api.Approval{ApprovalID: p.ID, ToolCallID: p.ToolCallID, Tool: p.Tool,
				Input: p.Input, Expires: p.Expires})
		}
		for _, c := range t.Callbacks {
			if ex, ok := t.Execution(c.ToolCallID); !c.Ended() && ok && ex.Try() == c.Attempt {
				s.Callbacks = append(s.Callbacks, api.Callback{ToolCallID: c.ToolCallID, Tool: c.Tool, Attempt: c.Attempt,
					Opened: c.Opened, Beat: c.Beat, Deadline: c.Deadline()})
			}
		}
		if u := t.Uncertain; u != nil {
			s.Uncertain = &api.Execution{ExecutionID: u.ID, ToolCallID: u.ToolCallID, Tool: u.Tool, Idempotent: u.Idempotent, Attempt: u.Try()}
		}
	}
	return s
}

// summaryView is a session's head as GET /sessions lists it.
func summaryView(h dynamo.Head) api.Summary {
	return api.Summary{ID: h.Session, Agent: h.Agent, Status: h.Status, LastSeq: h.LastSeq,
		Created: h.Created, Updated: h.Updated, Turn: h.Turn, Cause: h.Cause, Usage: h.Usage}
}
