package spawn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/children"
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

// DepthLimit is c's MaxDepth, or baton.DefaultMaxDepth when it is zero.
func DepthLimit(c baton.Children) int {
	if c.MaxDepth > 0 {
		return c.MaxDepth
	}
	return baton.DefaultMaxDepth
}

// ChildLimit is c's MaxChildren, or baton.DefaultMaxChildren when it is
// zero.
func ChildLimit(c baton.Children) int {
	if c.MaxChildren > 0 {
		return c.MaxChildren
	}
	return baton.DefaultMaxChildren
}

// None reports whether c names no child and no hand-off.
func None(c baton.Children) bool { return len(c.Agents) == 0 && len(c.Handoffs) == 0 }

// Config is the sub-agents part of an agent file's agent (baton.Children):
// mode is its children field, "all" (or "") or "each". Whether the agents
// it names exist is checked once all agents are known (Link); its limits
// with the rest of what Go agents share (agentspec.CheckShared).
func Config(mode string, agents, handoffs []string, maxDepth, maxChildren int) (baton.Children, error) {
	k := baton.Children{Agents: agents, Handoffs: handoffs, MaxDepth: maxDepth, MaxChildren: maxChildren}
	switch mode {
	case "", "all":
	case "each":
		k.Each = true
	default:
		return k, fmt.Errorf("%q: want all or each", mode)
	}
	return k, nil
}

// Link checks agent name's Children c against the agents there are (agent
// reports whether one is defined, and whether it has remote tools) and
// returns own, its tools, with the tools of its sub-agents and hand-offs
// added. An agent named but missing, a name no provider takes as a tool's,
// a hand-off to itself or to an agent with remote tools, a limit
// Children.Check refuses, or a tool name already taken is an error.
func Link(name string, c baton.Children, own *tool.Registry, agent func(name string) (defined, remote bool)) (*tool.Registry, error) {
	if field, err := c.Check(); err != nil {
		return nil, fmt.Errorf("children: %s: %w", field, err)
	}
	var add []tool.Tool
	for _, n := range c.Agents {
		if ok, _ := agent(n); !ok {
			return nil, fmt.Errorf("children: agent %q is not defined", n)
		}
		if tool.CheckName(n) != nil {
			return nil, fmt.Errorf("children: agent %q: a tool's name is 1 to 64 letters, digits, _ or -", n)
		}
		add = append(add, childTool(n))
	}
	for _, n := range c.Handoffs {
		ok, remote := agent(n)
		switch {
		case !ok:
			return nil, fmt.Errorf("handoffs: agent %q is not defined", n)
		case n == name:
			return nil, fmt.Errorf("handoffs: an agent does not hand off to itself")
		case remote:
			return nil, fmt.Errorf("handoffs: agent %q has remote tools, which a hand-off cannot offer", n)
		case tool.CheckName(HandoffPrefix+n) != nil:
			return nil, fmt.Errorf("handoffs: agent %q: %s%s is not a tool name a provider takes", n, HandoffPrefix, n)
		}
		add = append(add, handoffTool(n))
	}
	var tools []tool.Tool
	if own != nil {
		tools = own.Tools()
	}
	return tool.NewRegistry(append(tools, add...)...)
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

// Turn is the invocation as its children reach it: the runner's port,
// which package turn implements over an invocation's core.
type Turn interface {
	// Session and TurnID name the session and its open turn; State is
	// the session as the invocation last wrote or read it.
	Session() string
	TurnID() string
	State() reducer.State
	// Children are the running agent's; Check checks a call's input
	// against the tools offered; MaxToolOutput bounds a result.
	Children() baton.Children
	Check(tool string, input json.RawMessage) error
	MaxToolOutput() int
	// Emit adds parts to the turn's stream; Parts are its parts so far;
	// Flush makes them durable.
	Emit(ps ...parts.Part)
	Parts() []parts.Part
	Flush(ctx context.Context) error
	// Append commits the invocation's facts.
	Append(ctx context.Context, facts ...reducer.Fact) error
	// HandOff is the switch to deployed agent name, the rest of the turn
	// running it; false when it is not deployed.
	HandOff(name string) (take func(), ok bool)
	// Log is the runner's logger.
	Log() *slog.Logger
}

// Sessions is what the children need of the session store.
type Sessions interface {
	CreateChild(ctx context.Context, owner string, p reducer.Parent, c reducer.Child) (bool, error)
	Report(ctx context.Context, id string) error
	Load(ctx context.Context, id string) (*session.Session, error)
	Cancel(ctx context.Context, id string, actor reducer.Actor, reason string) error
	Delete(ctx context.Context, id, owner, by string) error
}

// Kids settles a turn's sub-agent calls and hand-off, owning those found
// in the step being settled; the turn suspends for them as Settle says.
type Kids struct {
	t     Turn
	s     Sessions
	found found // the sub-agent calls Admit found
}

// New is the children of invocation t, on the session store s.
func New(t Turn, s Sessions) Kids { return Kids{t: t, s: s} }

// found is what settling a step's calls found of sub-agents: children to
// start, children still running, and a hand-off.
type found struct {
	spawn   []reducer.Child
	waiting []reducer.Child
	handoff string // the agent
	call    string // the hand-off's tool call
}

// Reset forgets what Admit found, as settling a step begins.
func (k *Kids) Reset() { k.found = found{} }

// Active reports whether Admit found children or a hand-off to settle.
func (k *Kids) Active() bool {
	return len(k.found.spawn)+len(k.found.waiting) > 0 || k.found.handoff != ""
}

// Admit settles pending call c if it is a sub-agent's or a hand-off:
// a child that ended has its result emitted, a running one waits, a new
// one is to start (unless a limit or the check of its task, a message's
// text, refuses it: an error result says which),
// and a hand-off is taken. It reports whether c was one.
func (k *Kids) Admit(c *conversation.Call, turn *reducer.Turn) bool {
	ru, st := k.t, k.t.State()
	lim := ru.Children()
	if target, ok := strings.CutPrefix(c.Name, HandoffPrefix); ok &&
		(slices.Contains(lim.Handoffs, target) || st.Agent == target) {
		if k.found.handoff != "" {
			ru.Emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: "the turn hands off once a step: to " + k.found.handoff})
			return true
		}
		k.found.handoff, k.found.call = target, c.ID
		return true
	}
	if !slices.Contains(lim.Agents, c.Name) {
		return false
	}
	if err := ru.Check(c.Name, c.Input); err != nil {
		ru.Emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID, ErrorText: err.Error()})
		return true
	}
	if ch, ok := turn.Child(c.ID); ok {
		if ch.Ended() {
			ru.Emit(k.result(c.ID, ch))
		} else {
			k.found.waiting = append(k.found.waiting, ch)
		}
		return true
	}
	if d := st.Depth() + 1; d > DepthLimit(lim) {
		ru.Emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID,
			ErrorText: fmt.Sprintf("cannot start the %s agent: a child here would be at depth %d, past this agent's maxDepth of %d", c.Name, d, DepthLimit(lim))})
		return true
	}
	if n := len(turn.Children) + len(k.found.spawn); n >= ChildLimit(lim) {
		ru.Emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID,
			ErrorText: fmt.Sprintf("cannot start the %s agent: this turn has started %d children, this agent's maxChildren", c.Name, n)})
		return true
	}
	var in struct {
		Task string `json:"task"`
	}
	_ = json.Unmarshal(c.Input, &in) // the schema accepted it
	if err := reducer.CheckText("task", in.Task); err != nil {
		// The child's first message is its task: the one message check applies.
		ru.Emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: c.ID,
			ErrorText: fmt.Sprintf("cannot start the %s agent: %v", c.Name, err)})
		return true
	}
	k.found.spawn = append(k.found.spawn, reducer.Child{ID: reducer.ChildID(ru.Session(), ru.TurnID(), c.ID),
		ToolCallID: c.ID, Agent: c.Name, Task: in.Task})
	return true
}

// result is the result of a call whose child ended: its final answer, or
// an error result saying how it ended.
func (k *Kids) result(call string, ch reducer.Child) parts.Part {
	if ch.Failed() {
		return parts.Part{Type: parts.ToolOutputError, ToolCallID: call,
			ErrorText: fmt.Sprintf("the %s agent did not answer (%s): %s", ch.Agent, ch.Status, ch.Error)}
	}
	out, _ := tool.Truncate(mustJSON(ch.Output), k.t.MaxToolOutput())
	return parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: call, Output: out}
}

// Next is what the turn does once Settle acted on what Admit found.
type Next int

const (
	// GoOn: the turn goes on.
	GoOn Next = iota
	// SuspendForApproval: the turn suspends for the step's approvals.
	SuspendForApproval
	// SuspendForChildren: the turn suspends for reducer.CauseChildren,
	// Each as the agent's Children say.
	SuspendForChildren
)

// Settle acts on what Admit found, after the step's other calls ran: it
// hands off, starts the new children and makes sure the running ones
// exist, then says to suspend for the approvals the step asks
// (approvals), or for the children (once their approval requests the
// stream does not show are shown); with neither, the turn goes on. An
// error stops the invocation.
func (k *Kids) Settle(ctx context.Context, approvals int) (Next, error) {
	if err := k.handOff(ctx); err != nil {
		return GoOn, err
	}
	if err := k.spawn(ctx); err != nil {
		return GoOn, err
	}
	switch {
	case approvals > 0:
		return SuspendForApproval, nil
	case len(k.found.spawn)+len(k.found.waiting) > 0:
		k.showRequests()
		return SuspendForChildren, nil
	default:
		return GoOn, nil
	}
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
func (k *Kids) showRequests() {
	shown := map[string]bool{}
	for _, p := range k.t.Parts() {
		if p.Type == DataChildApproval {
			var d childApproval
			if json.Unmarshal(p.Data, &d) == nil {
				shown[d.ID] = true
			}
		}
	}
	for _, r := range k.t.State().Turn.Requests {
		if !shown[r.Approval.ID] {
			k.t.Emit(parts.Part{Type: DataChildApproval, Data: mustJSON(childApproval{Child: r.Child, Session: r.Asker(), Approval: r.Approval})})
		}
	}
}

// spawn records the new children (child.started, after the step so far is
// durable), then creates every child the step waits for: the new ones, and
// the running ones again, as an invocation that died between the record
// and the creation may have left one uncreated. A creation is conditional,
// so a child is created once.
func (k *Kids) spawn(ctx context.Context) error {
	ru := k.t
	if len(k.found.spawn)+len(k.found.waiting) == 0 {
		return nil
	}
	if len(k.found.spawn) > 0 {
		if err := ru.Flush(ctx); err != nil {
			return err
		}
		facts := make([]reducer.Fact, len(k.found.spawn))
		for i := range k.found.spawn {
			facts[i] = reducer.Fact{Type: reducer.ChildStarted, Actor: agentActor(ru.TurnID()), Turn: ru.TurnID(), Child: &k.found.spawn[i]}
		}
		if err := ru.Append(ctx, facts...); err != nil {
			return err
		}
	}
	st := ru.State()
	for _, c := range append(slices.Clone(k.found.spawn), k.found.waiting...) {
		p := reducer.Parent{Session: ru.Session(), Turn: ru.TurnID(), ToolCallID: c.ToolCallID, Depth: st.Depth() + 1}
		if _, err := k.s.CreateChild(ctx, st.Owner, p, c); err != nil {
			return err
		}
	}
	return nil
}

// handOff takes the step's hand-off, if any: it records agent.handed-off
// (unless an invocation that died after recording it did), then answers the
// call, and the turn goes on with the new agent.
func (k *Kids) handOff(ctx context.Context) error {
	ru := k.t
	target := k.found.handoff
	if target == "" {
		return nil
	}
	take, ok := ru.HandOff(target)
	if !ok {
		ru.Emit(parts.Part{Type: parts.ToolOutputError, ToolCallID: k.found.call, ErrorText: fmt.Sprintf("agent %q is not deployed", target)})
		return nil
	}
	if ru.State().Agent != target {
		if err := ru.Flush(ctx); err != nil {
			return err
		}
		if err := ru.Append(ctx, reducer.Fact{Type: reducer.HandedOff, Actor: agentActor(ru.TurnID()), Turn: ru.TurnID(), Agent: target}); err != nil {
			return err
		}
	}
	ru.Emit(parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: k.found.call, Output: mustJSON(map[string]string{"agent": target})})
	take()
	return nil
}

// Report delivers the end of a child session's turn to its parent, best
// effort: a failure is logged, and the child's wake (or the tick's) reports
// it again (reducer.ReasonReport).
func (k *Kids) Report(ctx context.Context) {
	if k.t.State().Parent == nil {
		return
	}
	if err := k.s.Report(ctx, k.t.Session()); err != nil {
		k.t.Log().WarnContext(ctx, "report a child's end to its parent", "session", k.t.Session(), "err", err)
	}
}

// Orphaned cancels an invocation of a child session whose parent no
// longer waits for it: the parent's turn ended (its cascade cancels the
// children it left running, but a child it had not created yet, as when
// the cancel came between child.started and the creation, is created
// after it), or the call has its result. A child whose parent was deleted
// is deleted too, as the parent's delete would have. It reports whether
// the invocation is to end (as superseded, or, when the cancel failed,
// with err). It costs a read of the parent per invocation of a child, and
// none for a session without a parent. A parent that cannot be read is
// taken as still waiting.
func (k *Kids) Orphaned(ctx context.Context) (bool, error) {
	ru := k.t
	st := ru.State()
	p := st.Parent
	if p == nil {
		return false, nil
	}
	how := "is gone: the session was deleted"
	ps, err := k.s.Load(ctx, p.Session)
	if err == nil {
		how = "ended"
		if t := ps.State.Turn; t != nil && t.ID == p.Turn {
			if ch, ok := t.Child(p.ToolCallID); ok && !ch.Ended() {
				return false, nil
			}
			how = "has this child's result"
		}
	} else if !errors.Is(err, session.ErrNotFound) {
		ru.Log().WarnContext(ctx, "read a child's parent", "session", ru.Session(), "parent", p.Session, "err", err)
		return false, nil
	}
	deleted := err != nil // the parent was not found
	reason := children.OrphanReason(p.Session, p.Turn, how)
	if err := k.s.Cancel(ctx, ru.Session(), children.ParentActor, reason); err != nil {
		return true, err
	}
	if deleted {
		// Its parent was deleted, with the family it knew of: this child
		// (created after, by the parent's last invocation) goes the same
		// way. A failure leaves it cancelled, for the retention sweep.
		if derr := k.s.Delete(ctx, ru.Session(), st.Owner, children.ParentActor.ID); derr != nil {
			ru.Log().WarnContext(ctx, "delete a child of a deleted parent", "session", ru.Session(), "parent", p.Session, "err", derr)
		}
	}
	return true, nil
}

func agentActor(turn string) reducer.Actor {
	return reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
}

// mustJSON marshals values that cannot fail to marshal: strings and plain
// maps.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
