// Package baton defines agents and their tools: Agent, Tool and Func,
// approval rules, Model and Message, claims, children and limits. Baton
// runs LLM agent turns on AWS Lambda without a server: a turn can outlive
// one invocation, wait days for an operator to approve a tool call, stream
// live to a UI, and survive a crash without losing or silently repeating a
// step. This package links no AWS SDK: package host runs what it defines,
// and package batontest tests it.
//
// A whole program, the resume function of a deployment of template.yaml
// (make build builds it; package providers/anthropic makes a model to put
// in the script's place):
//
//	package main
//
//	import (
//		"context"
//		"log"
//
//		baton "github.com/baton-run/baton"
//		"github.com/baton-run/baton/host"
//	)
//
//	type order struct {
//		ID string `json:"id" jsonschema:"the order's id"`
//	}
//
//	func main() {
//		lookup := baton.Func("lookup_order", "Look an order up.",
//			func(ctx context.Context, in order) (string, error) { return "order " + in.ID + " has shipped", nil },
//			baton.Read())
//		model, err := baton.Script([]byte(`{"steps":[
//			{"toolCalls":[{"name":"lookup_order","input":{"id":"A-1"}}]},
//			{"text":"Your order has shipped."}]}`))
//		if err != nil {
//			log.Fatal(err)
//		}
//		desk := baton.Agent{Name: "desk", Model: model, System: "You answer customers.", Tools: []baton.Tool{lookup}}
//		host.Main(host.ResumeFunction, host.Config{Agents: []baton.Agent{desk}})
//	}
//
// # Agents
//
// An Agent has a name, a Model, a system prompt, tools, approval rules and
// Limits. Package host checks it when it builds the App (host.New,
// host.NewOn), or alone (host.Config.Check, which needs no AWS); its
// errors are *AgentError values that name the field at fault.
//
// Agents defined in Go and agents of the JSON agent file (BATON_AGENTS) run
// side by side: pass them, and the Go tools the file's agents may name, to
// host.New in a host.Config (Config.Agents, Config.Tools). A JSON agent
// names a Go tool by its name, as it names a built-in. Both kinds of agent
// pass the same checks: a limit a file refuses (a wakeDelay past what SQS
// can delay, a maxBackoff below backoff, a negative count) is refused in Go
// with the same field and reason.
//
// # Tools
//
// Func makes a Tool of a typed Go function. Its input JSON Schema is
// derived from the input type by github.com/google/jsonschema-go, and the
// runner validates each call's input against it before the call; input
// that does not match, and any error the function returns, reach the model
// as the tool's error result, never as a failed turn, unless the tool marks
// the error: Transient (retried by its Retry policy within the step's time,
// then the model's), ForModel (the model's, said explicitly) or Fatal (the
// turn fails, kind tool). Options set the effect (Read, Write, External),
// whether the tool is Idempotent, a Timeout for each try (never past the
// step's deadline; a try cut by it tells the model it timed out), a Retry
// policy, and when a call NeedsApproval.
//
// A tool knows its call: CallOf(ctx) gives the session, turn, step, call
// id, the session's owner, a side effect's execution and attempt, the try
// of a retried transient error, the operator's approval with its approver
// and reason, and the idempotency key (also IdempotencyKey(ctx)).
//
// Write and External tools are side effects. Before one runs, the execution
// ledger records its start durably; if the invocation dies mid-call, the
// resumed turn knows the outcome is uncertain: an Idempotent tool runs again
// with the same IdempotencyKey, any other waits for an operator to rerun or
// abandon it. A rerun verdict allows exactly one more run: the rerun is
// recorded as a new execution before it runs, so a crash during it puts it
// before an operator again. A transient retry is the same execution with the
// same key, recorded once: a tool returns Transient only for a failure before
// its effect, so the effect is never doubled.
//
// # Approvals
//
// A call that needs approval suspends the turn until an operator answers
// through the operator API; an approval runs the tool, a denial tells the
// model. Rules are those of the agent file (Rule, the one
// rule every kind of tool uses): Always, Never, PathPrefix (a string field
// at or under a path) and Over (a number field above a limit), and, in Go,
// When, a typed predicate on the tool's input. The input is checked
// against the tool's schema before any rule runs. Approvals fail closed: a
// condition asks unless it reads its field exactly once, under exactly its
// name, as the type it expects, and proves the call outside it, so a key
// in another case, a duplicated key, a missing field or a value of another
// type asks; a predicate that panics or errs asks. An agent's Approvals
// replace the policy of a tool by name.
//
// # MCP servers
//
// An agent may also use the tools of remote MCP servers over streamable
// HTTP (github.com/modelcontextprotocol/go-sdk). An MCPServer has a URL,
// headers whose values come from named environment variables, and an allow
// list; only allowed tools are offered to the model. Annotations set the
// rules: readOnlyHint makes a read, anything else is an external side
// effect covered by the ledger, idempotentHint makes it idempotent, and a
// destructive tool (MCP's default) needs approval unless the agent's
// Approvals say otherwise. A turn lists the allowed tools when it starts
// and records the list in its stream, so every invocation of the turn
// offers the same tools whatever the server lists by then; building the
// agent does not reach the server. A server that is down, or does not
// answer within the step's time, when a turn starts suspends the turn
// (tools-unavailable) for a later try; during a turn, it gives the model an
// error result. The turn neither crashes nor hangs. The program that runs
// turns (the resume function, dev, batontest) registers the MCP client,
// host.Config{MCP: providers.MCP()}, and only it links the MCP SDK; a turn
// in a program without one fails to list the tools.
//
// # Models
//
// A Model streams one step's events: text, reasoning, tool calls and a
// finish with the stop reason and usage. Plug in your own by implementing
// it with this package alone: a Request holds the conversation as Message
// and Content values, its Step, and helpers (LastUserText, Results); a
// ModelError of a ModelErrorKind says whether a failed step is retried,
// suspends the turn or fails it. The providers baton ships (Anthropic,
// OpenAI-compatible, Bedrock) are chosen by name in the agent file. Script
// makes a deterministic Model for tests and demos.
//
// # Programs
//
// A program owns its mains, and package host runs them: host.Main builds
// the App of a deployed function from the environment template.yaml sets
// and a host.Config of the program's agents and tools, and starts the
// function's handler. Model providers an agent file names ("anthropic",
// "bedrock", "openai") are registered by the program, in
// host.Config.Providers (package providers: providers.All(), or the ones
// it uses), so a program links only those; so are the MCP client, the
// model key store and the invoker of lambda tools. Package dev runs a
// Config on one machine, with the emulator; package batontest runs it in
// tests. The demo agent's tools (DemoTools) belong to the embedded demo
// agent; a program that brings its own agents and no agent file runs its
// agents only.
//
// # The repository
//
// Template returns the AWS SAM template that deploys the three functions
// (operator, resume, tick) with their table, bucket and queues; the local
// dev server and the tests create the same resources from it.
package baton
