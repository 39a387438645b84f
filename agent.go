package baton

import (
	"fmt"
	"time"

	"github.com/baton-run/baton/internal/files/spec"
	"github.com/baton-run/baton/pkg/reducer"
)

// Agent is an agent defined in Go: what a turn runs. It is the Go form of
// an agent in the agent file, and both kinds run side by side.
type Agent struct {
	// Name is how sessions name the agent. Required.
	Name string
	// Model plays each step. Required.
	Model Model
	// System is the system prompt: at most 256 KiB of UTF-8.
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
	// the defaults (DefaultLimits).
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
	// hand the conversation to. host.New checks the limits
	// (Children.Check: MaxDepth at most 10, MaxChildren at most 32) and the
	// names against all the agents, Go and agent-file alike.
	Children Children
	// Guardrails check each message a turn answers (OnInput) and each
	// model step's text (OnOutput), in order within a stage.
	Guardrails []Guardrail
	// OnChange is what a turn does when it resumes on a changed definition
	// (a deploy changed the agent's fingerprint while it waited):
	// OnChangeContinue (also when empty) runs on the new definition,
	// OnChangeFail ends the turn with a reason, OnChangePin resumes it on
	// the build it started on (see docs/operations.md). The policy the
	// turn started under governs it.
	OnChange OnChange
	// Files is what a message to the agent may carry: media types, the
	// largest file, files per message, and whether https URLs are
	// fetched. The zero value accepts images (PNG, JPEG, GIF, WebP) and
	// PDF up to 20 MB, 5 a message, and fetches no URL.
	Files Files
}

// Files is what an agent accepts in a message's files (see Agent.Files).
type Files = spec.Policy

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

// OnChange is an agent's policy for a turn that resumes on a changed
// definition.
type OnChange = reducer.OnChange

// OnChange policies: run on the new definition (continue), end the turn
// with a reason (fail), or resume on the build the turn started on (pin).
const (
	OnChangeContinue = reducer.OnChangeContinue
	OnChangeFail     = reducer.OnChangeFail
	OnChangePin      = reducer.OnChangePin
)

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
type MCPServer struct {
	// Name identifies the server in errors and logs.
	Name string
	// URL is the server's streamable HTTP endpoint (http or https).
	URL string
	// HeaderEnv maps an HTTP header to the environment variable holding its
	// value, such as "Authorization" to "GITHUB_MCP_TOKEN". Values are read
	// when the tools are listed; an unset or empty variable is an error.
	HeaderEnv map[string]string
	// Allow names the server's tools the agent may call; the server's other
	// tools are never offered to the model. It must not be empty, and every
	// name must be one the server lists: a turn whose server does not list
	// one fails at its start, naming it.
	Allow []string
	// Timeout bounds each request to the server; zero means 30 seconds.
	Timeout time.Duration
	// Claims are, by allowed tool, the resource claims a call needs, each
	// keyed by a top-level string field of the input, asked of the broker
	// before the call runs, as for any tool that declares claims (Claims).
	// Only a side effect claims: a tool the server marks read-only fails
	// the turn's start.
	Claims map[string][]ClaimDecl
}

// Caps is one set of spend caps (Spend's Turn and Session): input and
// output tokens and cost; zero is no cap.
type Caps = reducer.Caps

// AgentError is an Agent that does not build (host.New reports one per
// problem, joined). Field names the part at fault, such as "model",
// "tools[1]", "mcp[0].allow" or "approvals.x".
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
