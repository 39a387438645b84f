package turn

import (
	"time"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
)

// Limits bound a turn. Zero fields take the defaults.
type Limits struct {
	// Budget is how long one invocation may run; the Lambda deadline, when
	// sooner, wins.
	Budget time.Duration
	// Margin is kept back at the end of the budget for the last flush and
	// fact writes. No step starts unless it is expected to end before
	// deadline minus Margin, and a step still running then is aborted.
	Margin time.Duration
	// MaxStepsPerInvocation and MaxStepsPerTurn cap model steps.
	MaxStepsPerInvocation int
	MaxStepsPerTurn       int
	// MaxInvocationsPerTurn fails a turn that keeps being resumed without
	// finishing, such as one whose every step outlasts the budget.
	MaxInvocationsPerTurn int
	// LeaseGrace is added to the deadline to form the invocation's lease;
	// past it the reaper may take the turn over.
	LeaseGrace time.Duration
	// ApprovalTTL is how long an approval request waits before the tick
	// denies it.
	ApprovalTTL time.Duration
	// ModelRetry is how the turn rides out transient model faults: a
	// failed step is redone within the invocation, then the turn suspends
	// with a growing delayed wake, and fails after a bounded number of
	// such suspensions. Zero fields take model.DefaultRetryPolicy's.
	ModelRetry model.RetryPolicy
	// LiveFlush, when positive, also flushes an unfinished step's parts
	// at most this often, with a leading and a trailing edge
	// (streams.Live), so a UI watching the stream sees tokens within
	// LiveFlush of the model producing them, even when the model pauses,
	// at the cost of more writes per step: at most one per LiveFlush of
	// the step's time, besides the step end's. Zero flushes at step ends
	// only.
	LiveFlush time.Duration
	// Spend caps the turn's and the session's tokens and cost; zero caps
	// are no limit.
	Spend Spend
}

// Spend caps what a turn and its session may spend. They are checked
// before each model step: the turn's usage so far against Turn, the
// session's (ended turns plus this one) against Session. An operator may
// raise them for a turn suspended at one (reducer.LimitsRaised); raised
// caps override these.
type Spend struct {
	Turn    reducer.Caps
	Session reducer.Caps
	// Fail makes a reached cap fail the turn with reducer.FailLimit;
	// otherwise it suspends for reducer.CauseLimit until an operator
	// raises the cap or cancels the turn.
	Fail bool
}

// DefaultLimits suit a Lambda function with a 15-minute timeout.
func DefaultLimits() Limits {
	return Limits{
		Budget:                14 * time.Minute,
		Margin:                10 * time.Second,
		MaxStepsPerInvocation: 50,
		MaxStepsPerTurn:       200,
		MaxInvocationsPerTurn: 100,
		LeaseGrace:            time.Minute,
		ApprovalTTL:           72 * time.Hour,
		ModelRetry:            model.DefaultRetryPolicy(),
	}
}

// WithDefaults fills zero fields from the defaults.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	d.Budget = positive(l.Budget, d.Budget)
	d.Margin = positive(l.Margin, d.Margin)
	d.MaxStepsPerInvocation = positive(l.MaxStepsPerInvocation, d.MaxStepsPerInvocation)
	d.MaxStepsPerTurn = positive(l.MaxStepsPerTurn, d.MaxStepsPerTurn)
	d.MaxInvocationsPerTurn = positive(l.MaxInvocationsPerTurn, d.MaxInvocationsPerTurn)
	d.LeaseGrace = positive(l.LeaseGrace, d.LeaseGrace)
	d.ApprovalTTL = positive(l.ApprovalTTL, d.ApprovalTTL)
	d.ModelRetry = l.ModelRetry.WithDefaults()
	d.LiveFlush = l.LiveFlush
	d.Spend = l.Spend
	return d
}

// positive is v when it is above zero, else def.
func positive[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

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
	// Children are the agents it may call as tools and hand off to (see
	// children.go); AgentMap.Link adds their tools.
	Children Children
	linked   bool
}

// DefaultKeepTurns is how many recent ended turns a compaction keeps
// verbatim when Compaction.KeepTurns is zero.
const DefaultKeepTurns = 2

// DefaultKeepSteps is how many recent steps of the open turn a compaction
// keeps verbatim when Compaction.KeepSteps is zero.
const DefaultKeepSteps = 4

// DefaultSummaryPrompt is the summariser's system prompt when
// Compaction.Prompt is empty.
const DefaultSummaryPrompt = "You compact an agent's conversation so it can go on within its context window. " +
	"Summarise the conversation you are given for the agent's own later use: the user's goals and requests, " +
	"decisions made, facts learned, tool results that still matter, commitments and open questions. " +
	"Keep names, numbers and identifiers exact. Write the summary only, as plain text."

// Compaction is an agent's context compaction policy. Before each model
// step the runner estimates the request's input tokens (or has the
// provider count them, when the model is a model.Counter and the estimate
// is near the budget). Past InputTokens, the ended turns before the last
// KeepTurns are summarised by Model into one message, recorded durably
// (reducer.ContextCompacted, naming a compacted snapshot) before the step
// runs; from then on the session rebuilds from the summary and the turns
// after it. With no ended turn left to summarise, the open turn's steps
// before the last KeepSteps are summarised instead, in its stream.
type Compaction struct {
	// InputTokens is the budget for a request's input. Required.
	InputTokens int64
	// KeepTurns is how many recent ended turns stay verbatim; zero means
	// DefaultKeepTurns, and a negative number keeps none.
	KeepTurns int
	// KeepSteps is how many recent steps of the open turn stay verbatim
	// when no ended turn is left to summarise and the turn's own steps
	// pass the budget; zero means DefaultKeepSteps, and a negative number
	// keeps none.
	KeepSteps int
	// Model summarises; nil means the agent's own. Name, for the record,
	// names it when it is not the agent's; Price prices its tokens (nil:
	// the agent's Price when Model is nil, else unpriced).
	Model model.Model
	Name  string
	Price *reducer.Price
	// Prompt is the summariser's system prompt; empty means
	// DefaultSummaryPrompt. MaxTokens caps the summary; zero means 2048.
	Prompt    string
	MaxTokens int
}

func (c *Compaction) keepSteps() int { return keeping(c.KeepSteps, DefaultKeepSteps) }
func (c *Compaction) keep() int      { return keeping(c.KeepTurns, DefaultKeepTurns) }

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

// Has reports whether the named agent exists.
func (m AgentMap) Has(name string) bool {
	_, ok := m[name]
	return ok
}

// Children are an agent's sub-agents and hand-offs.
type Children struct {
	// Agents are the agents this one may call as tools, each a tool of the
	// agent's name whose input is {"task": "..."}; the child's final answer
	// is the call's result.
	Agents []string
	// Handoffs are the agents this one may hand the session to.
	Handoffs []string
	// Each resumes a turn waiting for several children as each ends (its
	// result is streamed then), instead of once all have.
	Each bool
	// MaxDepth bounds how deep this agent's children may be nested: a
	// top-level session's children are at depth 1. MaxChildren bounds the
	// children one turn may start. Zero takes the defaults; Check refuses
	// a negative value and one past MaxDepthBound or MaxChildrenBound.
	MaxDepth    int
	MaxChildren int
}
