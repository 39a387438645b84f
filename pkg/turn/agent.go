package turn

import (
	"encoding/json"
	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
)

// Limits bound a turn (see baton.Limits). Zero fields take the defaults.
type Limits = baton.Limits

// Spend caps what a turn and its session may spend (see baton.Spend).
type Spend = baton.Spend

// DefaultLimits suit a Lambda function with a 15-minute timeout.
func DefaultLimits() Limits { return baton.DefaultLimits() }

// Agent is what a turn runs: a model, its tools and its limits.
type Agent struct {
	Name   string
	System string
	Model  model.Model
	// Identity names Model (provider and model name) for traces and
	// metrics; an agent file's agent has its provider and model. When
	// zero, the model's own (model.Identified), if it gives one.
	Identity model.Identity
	Tools    *tool.Registry
	// Remote, when set, provides tools that live outside the program, such
	// as remote MCP servers'. A turn lists them when it starts and records
	// the list in its stream (DataTools); every invocation of the turn
	// offers the recorded tools after Tools, so a resumed one rebuilds the
	// same model input whatever the source lists by then.
	Remote    tool.Source
	MaxTokens int
	// MaxToolOutput caps a tool result in bytes; 0 means 16 KiB.
	MaxToolOutput int
	Limits        Limits
	// Price, when set, prices the model's tokens: each step's cost is in
	// its message-metadata and counts against the cost caps.
	Price *reducer.Price
	// Compaction, when set, summarises older history once the model's
	// input would pass a token budget.
	Compaction *Compaction
	// Steering is the policy for a message that arrives while a turn is
	// open: enqueue (also when empty), steer, interrupt or reject. The
	// session store applies it as the message is posted (session.Store's
	// Steering); a run of a steer or interrupt agent looks for such
	// messages at each step boundary.
	Steering reducer.Steering
	// Files is what a message to the agent may carry (internal/files);
	// the session store checks a message's files against it as it is
	// posted (session.Store's FilePolicy).
	Files files.Policy
	// Children are the agents it may call as tools and hand off to (see
	// children.go); AgentMap.Link adds their tools.
	Children Children
	// Guardrails check the turn's input and each step's output (see
	// guards.go), in order within a stage.
	Guardrails []guard.Guardrail
	// OnChange is what a turn does when it resumes on a changed
	// definition: continue (also when empty), fail or pin (onchange.go).
	// Each turn records the policy it started under, which governs it.
	OnChange reducer.OnChange
	linked   bool
}

// The compaction defaults (see baton.Compaction).
const (
	DefaultKeepTurns     = baton.DefaultKeepTurns
	DefaultKeepSteps     = baton.DefaultKeepSteps
	DefaultSummaryPrompt = baton.DefaultSummaryPrompt
)

// Compaction is an agent's context compaction policy (see
// baton.Compaction).
type Compaction = baton.Compaction

func keepSteps(c *Compaction) int { return keeping(c.KeepSteps, DefaultKeepSteps) }
func keepTurns(c *Compaction) int { return keeping(c.KeepTurns, DefaultKeepTurns) }

// keeping is how many to keep for a Keep field of n: def for zero, none
// for a negative n.
func keeping(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

func (a *Agent) maxToolOutput() int {
	if a.MaxToolOutput > 0 {
		return a.MaxToolOutput
	}
	return 16 << 10
}

// Agents finds an agent by name.
type Agents interface {
	Agent(name string) (*Agent, bool)
}

// AgentMap is a fixed set of agents.
type AgentMap map[string]*Agent

// Agent returns the named agent.
func (m AgentMap) Agent(name string) (*Agent, bool) {
	a, ok := m[name]
	return a, ok
}

// Steering returns the named agent's steering policy, "" for an unknown
// agent; it is what session.Store's Steering wants.
func (m AgentMap) Steering(name string) reducer.Steering {
	if a, ok := m[name]; ok {
		return a.Steering
	}
	return ""
}

// FilePolicy returns the named agent's file policy, the default for an
// unknown agent; it is what session.Store's FilePolicy wants.
func (m AgentMap) FilePolicy(name string) files.Policy {
	if a, ok := m[name]; ok {
		return a.Files
	}
	return files.Policy{}
}

// CheckInput checks input against the schema of the named agent's tool,
// as an operator's edit is (session.Store's CheckInput). A tool the agent
// does not list here (an MCP server's, listed as its turns start) passes;
// the runner checks it again as it admits the edited call.
func (m AgentMap) CheckInput(agent, tool string, input json.RawMessage) error {
	a, ok := m[agent]
	if !ok || a.Tools == nil {
		return nil
	}
	if _, ok := a.Tools.Get(tool); !ok {
		return nil
	}
	return a.Tools.Check(tool, input)
}

// Has reports whether the named agent exists.
func (m AgentMap) Has(name string) bool {
	_, ok := m[name]
	return ok
}
