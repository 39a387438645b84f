package baton

import (
	"fmt"
	"time"

	"github.com/baton-run/baton/internal/model"
)

// ModelRetry is how a turn rides out transient model faults (Limits'
// ModelRetry): a failed step is tried again within the invocation, after a
// backoff, while the tries and the step's time last; a fault that outlasts
// them suspends the turn with a delayed wake that grows with each
// suspension in a row, and after Suspensions of them the turn fails. Zero
// fields take the defaults: 4 attempts, a 500ms backoff doubling up to
// 30s, a 30s wake delay doubling up to 15m (the longest an SQS wake can be
// delayed), 20 suspensions.
type ModelRetry = model.RetryPolicy

// Limits bound a turn. Zero fields take the defaults (DefaultLimits).
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
	// such suspensions. Zero fields take the defaults (DefaultLimits).
	ModelRetry ModelRetry
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
	// Turn caps what one turn spends; Session what the session spends,
	// its ended turns and this one.
	Turn    Caps
	Session Caps
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

// Defaults of Children's limits, and the most they may be set to. Every
// level of a family checks the depth a new child would be at against the
// spawning agent's own maxDepth, so an agent that lists itself as a child
// (directly or through a cycle) nests no deeper than the largest maxDepth on
// the way: a session's family is at most maxChildren + maxChildren² + … +
// maxChildren^maxDepth sessions, under the largest limits of its agents.
const (
	DefaultMaxDepth    = 3
	DefaultMaxChildren = 8
	MaxDepthBound      = 10
	MaxChildrenBound   = 32
)

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

// Check is the one check of Children's limits, for Go agents and agent
// files alike: maxDepth from 0 (the default) to MaxDepthBound, maxChildren
// from 0 to MaxChildrenBound. It returns the field at fault, named as in an
// agent file ("maxDepth", "maxChildren"), and why.
func (c Children) Check() (string, error) {
	for _, f := range []struct {
		field    string
		v, bound int
	}{{"maxDepth", c.MaxDepth, MaxDepthBound}, {"maxChildren", c.MaxChildren, MaxChildrenBound}} {
		switch {
		case f.v < 0:
			return f.field, fmt.Errorf("%d is negative", f.v)
		case f.v > f.bound:
			return f.field, fmt.Errorf("%d is more than the %d allowed", f.v, f.bound)
		}
	}
	return "", nil
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
	Model Model
	Name  string
	Price *Price
	// Prompt is the summariser's system prompt; empty means
	// DefaultSummaryPrompt. MaxTokens caps the summary; zero means 2048.
	Prompt    string
	MaxTokens int
}
