package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// Sub-agents and hand-offs. An agent's Children name the agents it may call
// as tools (each a tool named after the agent, taking a task) and those it
// may hand the session to (a tool named HandoffPrefix plus the agent's
// name). A call of a child agent starts a child session: the turn records
// child.started (the child's id derived from the session, the turn and the
// call, reducer.ChildID), creates the child with one conditional write
// (session.Store.CreateChild), and suspends for reducer.CauseChildren with
// no invocation running. The child's end is delivered to the turn as a
// child.ended fact (session.Store.Report), which wakes it; the turn then
// emits the child's final answer as the call's result (an error result for
// a child that failed or was cancelled). A hand-off records
// agent.handed-off, and the rest of the turn and the session's later
// turns run the new agent, with its instructions and tools.

// HandoffPrefix starts the name of the tool that hands the session to an
// agent: handoff_to_<agent>.
const HandoffPrefix = "handoff_to_"

// Defaults of Children's limits, and the most they may be set to (see
// baton.Children).
const (
	DefaultMaxDepth    = baton.DefaultMaxDepth
	DefaultMaxChildren = baton.DefaultMaxChildren
	MaxDepthBound      = baton.MaxDepthBound
	MaxChildrenBound   = baton.MaxChildrenBound
)

// Children are an agent's sub-agents and hand-offs (see baton.Children).
type Children = baton.Children

// depthLimit is c's MaxDepth, or DefaultMaxDepth when it is zero.
func depthLimit(c Children) int {
	if c.MaxDepth > 0 {
		return c.MaxDepth
	}
	return DefaultMaxDepth
}

// childLimit is c's MaxChildren, or DefaultMaxChildren when it is zero.
func childLimit(c Children) int {
	if c.MaxChildren > 0 {
		return c.MaxChildren
	}
	return DefaultMaxChildren
}

// noChildren reports whether c names no child and no hand-off.
func noChildren(c Children) bool { return len(c.Agents) == 0 && len(c.Handoffs) == 0 }

// Link checks every agent's Children against the agents there are and adds
// their tools to the agents that name them: one check for Go agents and
// agent-file agents alike. An agent named but missing, a name no provider
// takes as a tool's, a hand-off to itself or to an agent with remote tools,
// a limit Children.Check refuses, or a tool name already taken is an error naming the
// agent. Linking twice changes nothing.
func (m AgentMap) Link() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if err := m.link(m[name]); err != nil {
			errs = append(errs, fmt.Errorf("turn: agent %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func (m AgentMap) link(a *Agent) error {
	c := a.Children
	if noChildren(c) || a.linked {
		return nil
	}
	if field, err := c.Check(); err != nil {
		return fmt.Errorf("children: %s: %w", field, err)
	}
	var add []tool.Tool
	for _, n := range c.Agents {
		if _, ok := m[n]; !ok {
			return fmt.Errorf("children: agent %q is not defined", n)
		}
		if tool.CheckName(n) != nil {
			return fmt.Errorf("children: agent %q: a tool's name is 1 to 64 letters, digits, _ or -", n)
		}
		add = append(add, childTool(n))
	}
	for _, n := range c.Handoffs {
		t, ok := m[n]
		switch {
		case !ok:
			return fmt.Errorf("handoffs: agent %q is not defined", n)
		case n == a.Name:
			return fmt.Errorf("handoffs: an agent does not hand off to itself")
		case t.Remote != nil:
			return fmt.Errorf("handoffs: agent %q has remote tools, which a hand-off cannot offer", n)
		case tool.CheckName(HandoffPrefix+n) != nil:
			return fmt.Errorf("handoffs: agent %q: %s%s is not a tool name a provider takes", n, HandoffPrefix, n)
		}
		add = append(add, handoffTool(n))
	}
	var own []tool.Tool
	if a.Tools != nil {
		own = a.Tools.Tools()
	}
	reg, err := tool.NewRegistry(append(own, add...)...)
	if err != nil {
		return err
	}
	a.Tools, a.linked = reg, true
	return nil
}

var childSchema = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"What the agent is to do, with everything it needs to know."}},"required":["task"],"additionalProperties":false}`)

var handoffSchema = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"Why the conversation goes to that agent."}},"additionalProperties":false}`)

// errRunsAsChild is what a sub-agent's tool returns if it is ever run as
// a tool: the runner starts a child session for its calls instead.
var errRunsAsChild = errors.New("a sub-agent runs as a child session, not as a tool")

func childTool(agent string) tool.Tool {
	return tool.Tool{Name: agent, Schema: childSchema, Effect: tool.Read,
		Description: "Ask the " + agent + " agent to do a task. It works in a session of its own and its final answer is this call's result.",
		Run:         func(context.Context, tool.Call) (json.RawMessage, error) { return nil, errRunsAsChild }}
}

func handoffTool(agent string) tool.Tool {
	return tool.Tool{Name: HandoffPrefix + agent, Schema: handoffSchema, Effect: tool.Read,
		Description: "Hand the conversation to the " + agent + " agent, which answers from now on with its own instructions and tools.",
		Run:         func(context.Context, tool.Call) (json.RawMessage, error) { return nil, errRunsAsChild }}
}

// kids is what settling a step's calls found of sub-agents: children to
// start, children still running, and a hand-off.
// children settles a turn's sub-agent calls and hand-off, owning those
// found in the step being settled (kids); the endings suspend the turn
// for them.
type children struct {
	*core
	end  ender
	kids kids // the sub-agent calls settle found
}

type kids struct {
	spawn   []reducer.Child
	waiting []reducer.Child
	handoff string // the agent
	call    string // the hand-off's tool call
}

func (k *kids) active() bool { return len(k.spawn)+len(k.waiting) > 0 || k.handoff != "" }

// admitChild settles pending call c if it is a sub-agent's or a hand-off:
// a child that ended has its result emitted, a running one waits, a new
// one is to start (unless a limit or the check of its task, a message's
// text, refuses it: an error result says which),
// and a hand-off is taken. It reports whether c was one.
func (ru *children) admitChild(c *conversation.Call, turn *reducer.Turn) bool {
	if target, ok := strings.CutPrefix(c.Name, HandoffPrefix); ok &&
		(slices.Contains(ru.agent.Children.Handoffs, target) || ru.sess.State.Agent == target) {
		if ru.kids.handoff != "" {
			ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: "the turn hands off once a step: to " + ru.kids.handoff})
			return true
		}
		ru.kids.handoff, ru.kids.call = target, c.ID
		return true
	}
	if !slices.Contains(ru.agent.Children.Agents, c.Name) {
		return false
	}
	if err := ru.tools.Check(c.Name, c.Input); err != nil {
		ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: err.Error()})
		return true
	}
	if ch, ok := turn.Child(c.ID); ok {
		if ch.Ended() {
			ru.emit(ru.childResult(c.ID, ch))
		} else {
			ru.kids.waiting = append(ru.kids.waiting, ch)
		}
		return true
	}
	lim := ru.agent.Children
	if d := ru.sess.State.Depth() + 1; d > depthLimit(lim) {
		ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID,
			ErrorText: fmt.Sprintf("cannot start the %s agent: a child here would be at depth %d, past this agent's maxDepth of %d", c.Name, d, depthLimit(lim))})
		return true
	}
	if n := len(turn.Children) + len(ru.kids.spawn); n >= childLimit(lim) {
		ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID,
			ErrorText: fmt.Sprintf("cannot start the %s agent: this turn has started %d children, this agent's maxChildren", c.Name, n)})
		return true
	}
	var in struct {
		Task string `json:"task"`
	}
	_ = json.Unmarshal(c.Input, &in) // the schema accepted it
	if err := reducer.CheckText("task", in.Task); err != nil {
		// The child's first message is its task: the one message check applies.
		ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID,
			ErrorText: fmt.Sprintf("cannot start the %s agent: %v", c.Name, err)})
		return true
	}
	ru.kids.spawn = append(ru.kids.spawn, reducer.Child{ID: reducer.ChildID(ru.out.Session, ru.out.Turn, c.ID),
		ToolCallID: c.ID, Agent: c.Name, Task: in.Task})
	return true
}

// childResult is the result of a call whose child ended: its final
// answer, or an error result saying how it ended.
func (ru *children) childResult(call string, ch reducer.Child) parts.Part {
	if ch.Failed() {
		return parts.Part{Type: parts.ToolOutputError, ToolCallID: call,
			ErrorText: fmt.Sprintf("the %s agent did not answer (%s): %s", ch.Agent, ch.Status, ch.Error)}
	}
	out, _ := tool.Truncate(mustJSON(ch.Output), ru.agent.maxToolOutput())
	return parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: call, Output: out}
}

// settleKids acts on what admitChild found, after the step's other calls
// ran: it hands off, starts the new children and makes sure the running
// ones exist, then suspends for the approvals the step asks, or for the
// children; with neither, the turn goes on.
func (ru *children) settleKids(ctx context.Context, approvals []reducer.Approval) (stop bool, out Outcome, err error) {
	if err := ru.handOff(ctx); err != nil {
		out, err := ru.end.stopped(ctx, err)
		return true, out, err
	}
	if err := ru.spawn(ctx); err != nil {
		out, err := ru.end.stopped(ctx, err)
		return true, out, err
	}
	switch {
	case len(approvals) > 0:
		out, err = ru.end.suspendForApproval(ctx, approvals)
	case len(ru.kids.spawn)+len(ru.kids.waiting) > 0:
		ru.showRequests()
		out, err = ru.end.suspend(ctx, reducer.CauseChildren, 0, reducer.Fact{Type: reducer.TurnSuspended, Each: ru.agent.Children.Each})
	default:
		ru.replay()
		return false, Outcome{}, nil
	}
	return true, out, err
}

// DataChildApproval is the part that shows, in a parent's stream, an
// approval request of one of its children or of a deeper descendant:
// data-child-approval{data: {child, session, id, toolCallId, tool, input,
// expires}}, child being the turn's child it came through and session the
// one that asked. Answering it (in the parent's chat, on any session of
// the chain, or on the one that asked) answers that session's request,
// under its approval id.
const DataChildApproval parts.Type = "data-child-approval"

// childApproval is a DataChildApproval part's data.
type childApproval struct {
	Child   string `json:"child"`
	Session string `json:"session"`
	reducer.Approval
}

// showRequests emits a DataChildApproval part for each approval request of
// the turn's children (child.approval) its stream does not show yet.
func (ru *children) showRequests() {
	shown := map[string]bool{}
	for _, p := range ru.parts {
		if p.Type == DataChildApproval {
			var d childApproval
			if json.Unmarshal(p.Data, &d) == nil {
				shown[d.ID] = true
			}
		}
	}
	for _, r := range ru.sess.State.Turn.Requests {
		if !shown[r.Approval.ID] {
			ru.emit(parts.Part{Type: DataChildApproval, Data: mustJSON(childApproval{Child: r.Child, Session: r.Asker(), Approval: r.Approval})})
		}
	}
}

// spawn records the new children (child.started, after the step so far is
// durable), then creates every child the step waits for: the new ones, and
// the running ones again, as an invocation that died between the record
// and the creation may have left one uncreated. A creation is conditional,
// so a child is created once.
func (ru *children) spawn(ctx context.Context) error {
	if len(ru.kids.spawn)+len(ru.kids.waiting) == 0 {
		return nil
	}
	if len(ru.kids.spawn) > 0 {
		if err := ru.sink.Flush(ctx); err != nil {
			return err
		}
		facts := make([]reducer.Fact, len(ru.kids.spawn))
		for i := range ru.kids.spawn {
			facts[i] = reducer.Fact{Type: reducer.ChildStarted, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Child: &ru.kids.spawn[i]}
		}
		if err := ru.append(ctx, facts...); err != nil {
			return err
		}
	}
	st := ru.sess.State
	for _, c := range append(slices.Clone(ru.kids.spawn), ru.kids.waiting...) {
		p := reducer.Parent{Session: ru.out.Session, Turn: ru.out.Turn, ToolCallID: c.ToolCallID, Depth: st.Depth() + 1}
		if _, err := ru.r.Sessions.CreateChild(ctx, st.Owner, p, c); err != nil {
			return err
		}
	}
	return nil
}

// handOff takes the step's hand-off, if any: it records agent.handed-off
// (unless an invocation that died after recording it did), then answers the
// call, and the turn goes on with the new agent.
func (ru *children) handOff(ctx context.Context) error {
	target := ru.kids.handoff
	if target == "" {
		return nil
	}
	a, ok := ru.r.Agents.Agent(target)
	if !ok {
		ru.emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: ru.kids.call, ErrorText: fmt.Sprintf("agent %q is not deployed", target)})
		return nil
	}
	if ru.sess.State.Agent != target {
		if err := ru.sink.Flush(ctx); err != nil {
			return err
		}
		if err := ru.append(ctx, reducer.Fact{Type: reducer.HandedOff, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Agent: target}); err != nil {
			return err
		}
	}
	ru.emit(parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: ru.kids.call, Output: mustJSON(map[string]string{"agent": target})})
	ru.agent, ru.tools = a, a.Tools
	return nil
}

// report delivers the end of a child session's turn to its parent, best
// effort: a failure is logged, and the child's wake (or the tick's) reports
// it again (reducer.ReasonReport).
func (ru *children) report(ctx context.Context) {
	if ru.sess.State.Parent == nil {
		return
	}
	if err := ru.r.Sessions.Report(ctx, ru.out.Session); err != nil {
		ru.r.log().WarnContext(ctx, "report a child's end to its parent", "session", ru.out.Session, "err", err)
	}
}

// Report delivers the end of child session id's last turn to its parent;
// the worker calls it for reducer.Report.
func (r *Runner) Report(ctx context.Context, id string) error { return r.Sessions.Report(ctx, id) }

// orphaned ends, as cancelled, an invocation of a child session whose
// parent no longer waits for it: the parent's turn ended (its cascade
// cancels the children it left running, but a child it had not created
// yet, as when the cancel came between child.started and the creation,
// is created after it), or the call has its result. A child whose parent
// was deleted is deleted too, as the parent's delete would have. It costs
// a read of the parent per invocation of a child, and none for a session
// without a parent. A parent that cannot be read is taken as still
// waiting.
func (ru *children) orphaned(ctx context.Context) (bool, Outcome, error) {
	p := ru.sess.State.Parent
	if p == nil {
		return false, Outcome{}, nil
	}
	how := "is gone: the session was deleted"
	ps, err := ru.r.Sessions.Load(ctx, p.Session)
	if err == nil {
		how = "ended"
		if t := ps.State.Turn; t != nil && t.ID == p.Turn {
			if ch, ok := t.Child(p.ToolCallID); ok && !ch.Ended() {
				return false, Outcome{}, nil
			}
			how = "has this child's result"
		}
	} else if !errors.Is(err, session.ErrNotFound) {
		ru.r.log().WarnContext(ctx, "read a child's parent", "session", ru.out.Session, "parent", p.Session, "err", err)
		return false, Outcome{}, nil
	}
	deleted := err != nil // the parent was not found
	reason := session.OrphanReason(p.Session, p.Turn, how)
	if err := ru.r.Sessions.Cancel(ctx, ru.out.Session, session.ParentActor, reason); err != nil {
		out, err := ru.end.stopped(ctx, err)
		return true, out, err
	}
	if deleted {
		// Its parent was deleted, with the family it knew of: this child
		// (created after, by the parent's last invocation) goes the same
		// way. A failure leaves it cancelled, for the retention sweep.
		if derr := ru.r.Sessions.Delete(ctx, ru.out.Session, ru.sess.State.Owner, session.ParentActor.ID); derr != nil {
			ru.r.log().WarnContext(ctx, "delete a child of a deleted parent", "session", ru.out.Session, "parent", p.Session, "err", derr)
		}
	}
	ru.out.Kind = Superseded
	return true, ru.out, nil
}
