package baton

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// Agent is an agent defined in Go: what a turn runs. It is the Go form of
// an agent in the agent file, and both kinds run side by side.
type Agent struct {
	// Name is how sessions name the agent. Required.
	Name string
	// Model plays each step. Required.
	Model Model
	// System is the system prompt: at most agents.MaxSystem (256 KiB) of
	// UTF-8.
	System string
	// Tools are the agent's own tools, in the order the model sees them.
	Tools []Tool
	// MCP lists remote MCP servers whose allowed tools follow Tools.
	MCP []MCPServer
	// Approvals replace the approval policy of the named tools (its own or
	// an MCP server's), such as Never() for a destructive MCP tool the
	// agent may call freely.
	Approvals map[string]Rule
	// Limits bound each invocation and the whole turn; zero fields take
	// the defaults (turn.DefaultLimits).
	Limits Limits
	// MaxOutputTokens caps each step's output; zero leaves it to the model.
	MaxOutputTokens int
	// MaxToolOutput caps a tool result in bytes; longer output is truncated
	// and marked. Zero means 16 KiB.
	MaxToolOutput int
	// Price, when set, prices the model's tokens (USD per million): each
	// step's metadata and the session's usage then carry a cost, and
	// Limits.Spend's cost caps apply.
	Price *Price
	// Compaction, when set, summarises older history once the model's
	// input would pass a token budget, so a session can outlive the
	// model's context window.
	Compaction *Compaction
	// Steering is the policy for a message that arrives while a turn is
	// open: SteerEnqueue (also when empty), SteerSteer, SteerInterrupt or
	// SteerReject.
	Steering Steering
	// Children are the agents it may call as tools, each call a child
	// session whose final answer is the call's result, and those it may
	// hand the conversation to (see turn.Children). Build checks the
	// limits (turn.Children.Check: MaxDepth at most 10, MaxChildren at most
	// 32); baton.New checks the names against all the agents, Go and
	// agent-file alike.
	Children Children
}

// Children are an agent's sub-agents and hand-offs, and their limits.
type Children = turn.Children

// Compaction is an agent's context compaction policy: the input token
// budget that triggers it, the recent turns kept verbatim, and the model
// that summarises (nil: the agent's own). See turn.Compaction.
type Compaction = turn.Compaction

// Price is a model's price table in USD per million tokens.
type Price = reducer.Price

// Steering is an agent's policy for a message that arrives while a turn
// is open.
type Steering = reducer.Steering

// Steering policies: the message starts the next turn (enqueue), is
// delivered into the running turn at its next step boundary (steer), ends
// the turn at its next boundary and starts a new one (interrupt), or is
// refused with a 409 (reject).
const (
	SteerEnqueue   = reducer.SteerEnqueue
	SteerSteer     = reducer.SteerSteer
	SteerInterrupt = reducer.SteerInterrupt
	SteerReject    = reducer.SteerReject
)

// Spend caps what a turn and its session may spend in tokens and cost
// (Limits.Spend); Caps is one set of such caps.
type (
	Spend = turn.Spend
	Caps  = reducer.Caps
)

// Limits bound a turn: the time an invocation may run and the margin it
// keeps back, steps per invocation and per turn, invocations per turn, the
// lease grace, how long an approval waits, the pause after a throttled
// model, and the live flush interval. Zero fields take the defaults.
type Limits = turn.Limits

// MCPServer is a remote MCP server reached over streamable HTTP: a name, a
// URL, headers whose values come from environment variables, and the allow
// list of the tools the agent may call. Its tools' annotations set their
// rules: readOnlyHint makes a read; any other tool is an external side
// effect, idempotent when idempotentHint says so, and one that is
// destructive (the MCP default) needs approval unless the agent's
// Approvals say otherwise. A turn lists the tools when it starts and
// offers that list until it ends, even across invocations; a server down
// then suspends the turn (tools-unavailable) for a later try. A call to a
// server that is down or does not answer in time gives the model an error
// result.
type MCPServer = mcp.Server

// MCPDialer reaches MCP servers (Config.MCP); providers.MCP() returns
// baton's. Agent.Build leaves its servers to the program's MCPDialer.
type MCPDialer = mcp.Dialer

// AgentError is an Agent that does not build. Field names the part at
// fault, such as "model", "tools[1]", "mcp[0].allow" or "approvals.x".
type AgentError struct {
	Agent, Field string
	Err          error
}

func (e *AgentError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("agent %q: %v", e.Agent, e.Err)
	}
	return fmt.Sprintf("agent %q: %s: %v", e.Agent, e.Field, e.Err)
}

func (e *AgentError) Unwrap() error { return e.Err }

// Build checks the agent and makes what the runner runs. It does not reach
// the MCP servers: a turn lists their allowed tools when it starts and
// offers that list for the rest of the turn. Build checks their
// configuration and that the header values are set in the process
// environment, applies Approvals by tool name and compiles every tool's
// schema. Every problem is reported, each an *AgentError, joined. Its
// servers are reached by no client: a turn fails to list their tools
// (mcp.NoDialerError). BuildWith gives them one; baton.New builds a
// Config's agents with Config.MCP.
func (a Agent) Build(ctx context.Context) (*turn.Agent, error) { return a.BuildWith(ctx, nil) }

// BuildWith is Build with the client that reaches the agent's MCP servers,
// such as providers.MCP().
func (a Agent) BuildWith(ctx context.Context, d MCPDialer) (*turn.Agent, error) {
	var errs []error
	bad := func(field string, err error) {
		errs = append(errs, &AgentError{Agent: a.Name, Field: field, Err: err})
	}
	if a.Name == "" {
		bad("name", errors.New("missing"))
	}
	if a.Model == nil {
		bad("model", errors.New("missing"))
	}
	shared := agents.Shared{System: a.System, MaxOutputTokens: a.MaxOutputTokens, MaxToolOutput: a.MaxToolOutput, Children: a.Children}
	if a.Compaction != nil {
		shared.CompactionPrompt = a.Compaction.Prompt
	}
	agents.CheckShared(shared, bad)
	if field, err := agents.CheckLimits(a.Limits); err != nil {
		bad(field, err)
	}
	if p := a.Price; p != nil && (p.InputPerMTok < 0 || p.OutputPerMTok < 0) {
		bad("price", errors.New("negative"))
	}
	if c := a.Compaction; c != nil {
		switch {
		case c.InputTokens <= 0:
			bad("compaction.InputTokens", errors.New("must be a positive number of tokens"))
		case c.MaxTokens < 0:
			bad("compaction.MaxTokens", errors.New("negative"))
		case c.KeepTurns < -1 || c.KeepSteps < -1:
			bad("compaction.KeepTurns", errors.New("KeepTurns and KeepSteps must be -1 (keep none) or more"))
		case c.Price != nil && (c.Price.InputPerMTok < 0 || c.Price.OutputPerMTok < 0):
			bad("compaction.Price", errors.New("negative"))
		}
	}
	if err := agents.CheckSteering(a.Steering); err != nil {
		bad("steering", err)
	}

	var local []agents.Local
	for i, t := range a.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		if t.Err != nil {
			bad(field, fmt.Errorf("tool %q: %w", t.Name, t.Err))
			continue
		}
		if sub, err := agents.CheckTool(t, a.Limits); err != nil {
			bad(field+"."+sub, fmt.Errorf("tool %q: %w", t.Name, err))
			continue
		}
		local = append(local, agents.Local{Field: field, Tool: t})
	}
	servers := make([]agents.Remote, len(a.MCP))
	for i, s := range a.MCP {
		servers[i] = agents.Remote{Field: fmt.Sprintf("mcp[%d]", i), Server: s}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Approvals)) {
		if err := a.Approvals[name].Validate(); err != nil {
			bad("approvals."+name, err)
		}
	}
	reg, remote := agents.Assemble(local, servers, a.Approvals, d, nil, bad)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &turn.Agent{Name: a.Name, System: a.System, Model: a.Model, Tools: reg, Remote: remote,
		MaxTokens: a.MaxOutputTokens, MaxToolOutput: a.MaxToolOutput, Limits: a.Limits, Price: a.Price,
		Compaction: a.Compaction, Steering: a.Steering, Children: a.Children}, nil
}
