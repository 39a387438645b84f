package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/children/spawn"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
)

// Sub-agents and hand-offs live in internal/children/spawn; this is the
// runner's wiring of them: their public names, the agents' Link, and the
// invocation as they reach it (spawn.Turn).

// HandoffPrefix starts the name of the tool that hands the session to an
// agent: handoff_to_<agent>.
const HandoffPrefix = spawn.HandoffPrefix

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

// DataChildApproval is the part that shows, in a parent's stream, an
// approval request of one of its children or of a deeper descendant (see
// spawn.DataChildApproval).
const DataChildApproval = spawn.DataChildApproval

// Link checks every agent's Children against the agents there are and adds
// their tools to the agents that name them: one check for Go agents and
// agent-file agents alike. An agent named but missing, a name no provider
// takes as a tool's, a hand-off to itself or to an agent with remote tools,
// a limit Children.Check refuses, or a tool name already taken is an error naming the
// agent (spawn.Link). Linking twice changes nothing.
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
	if spawn.None(a.Children) || a.linked {
		return nil
	}
	reg, err := spawn.Link(a.Name, a.Children, a.Tools, func(n string) (bool, bool) {
		t, ok := m[n]
		return ok, ok && t.Remote != nil
	})
	if err != nil {
		return err
	}
	a.Tools, a.linked = reg, true
	return nil
}

// children is the invocation's sub-agents (spawn.Kids) over its core; the
// endings suspend the turn for them.
type children struct {
	*core
	end ender
	spawn.Kids
}

// newChildren is the children of the invocation on c.
func newChildren(c *core) *children {
	k := &children{core: c}
	k.Kids = spawn.New(childTurn{c}, c.r.Sessions)
	return k
}

// settleKids acts on what Admit found, after the step's other calls ran
// (spawn.Kids.Settle), and suspends the turn as it says.
func (ru *children) settleKids(ctx context.Context, approvals []reducer.Approval) (stop bool, out Outcome, err error) {
	next, err := ru.Settle(ctx, len(approvals))
	switch {
	case err != nil:
		out, err = ru.end.stopped(ctx, err)
	case next == spawn.SuspendForApproval:
		out, err = ru.end.suspendForApproval(ctx, approvals)
	case next == spawn.SuspendForChildren:
		out, err = ru.end.suspend(ctx, reducer.CauseChildren, 0, reducer.Fact{Type: reducer.TurnSuspended, Each: ru.agent.Children.Each})
	default:
		ru.replay()
		return false, Outcome{}, nil
	}
	return true, out, err
}

// orphaned ends, as cancelled, an invocation of a child session whose
// parent no longer waits for it (spawn.Kids.Orphaned).
func (ru *children) orphaned(ctx context.Context) (bool, Outcome, error) {
	stop, err := ru.Orphaned(ctx)
	switch {
	case !stop:
		return false, Outcome{}, nil
	case err != nil:
		out, err := ru.end.stopped(ctx, err)
		return true, out, err
	}
	ru.out.Kind = Superseded
	return true, ru.out, nil
}

// report delivers the end of a child session's turn to its parent, best
// effort (spawn.Kids.Report): the ending's reporter.
func (ru *children) report(ctx context.Context) { ru.Report(ctx) }

// Report delivers the end of child session id's last turn to its parent;
// the worker calls it for reducer.Report.
func (r *Runner) Report(ctx context.Context, id string) error { return r.Sessions.Report(ctx, id) }

// childTurn is the invocation as its children reach it (spawn.Turn).
type childTurn struct{ *core }

func (c childTurn) Session() string                 { return c.out.Session }
func (c childTurn) TurnID() string                  { return c.out.Turn }
func (c childTurn) State() reducer.State            { return c.sess.State }
func (c childTurn) Children() baton.Children        { return c.agent.Children }
func (c childTurn) MaxToolOutput() int              { return c.agent.maxToolOutput() }
func (c childTurn) Emit(ps ...parts.Part)           { c.emit(ps...) }
func (c childTurn) Parts() []parts.Part             { return c.parts }
func (c childTurn) Flush(ctx context.Context) error { return c.sink.Flush(ctx) }
func (c childTurn) Log() *slog.Logger               { return c.r.log() }

func (c childTurn) Check(tool string, input json.RawMessage) error { return c.tools.Check(tool, input) }

func (c childTurn) Append(ctx context.Context, facts ...reducer.Fact) error {
	return c.append(ctx, facts...)
}

func (c childTurn) HandOff(name string) (func(), bool) {
	a, ok := c.r.Agents.Agent(name)
	if !ok {
		return nil, false
	}
	return func() { c.agent, c.tools = a, a.Tools }, true
}
