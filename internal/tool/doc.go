// Package tool is baton's seam to the tools an agent may call: a Tool has a
// name, a description, a JSON Schema for its input, an effect, and a policy
// saying which calls need an operator's approval. Rule (rule.go) is the
// approval rule of every kind of tool, Go, declared and MCP alike, and fails
// closed on input it cannot read (a Go predicate that panics or errs
// asks). Invoke (call.go) runs a call under its tool's Timeout and Retry
// policy, with the Call in its context (CallFrom), and reads a tool's
// typed Error: Transient, ForModel or Fatal. A Registry holds an agent's tools in a
// fixed order, and checks a call's input against its tool's JSON Schema
// (github.com/google/jsonschema-go; each schema compiled on its tool's
// first check, so a program that runs no tool compiles none), naming every
// problem it can in one sorted InputError (explain.go); a Source lists tools that live elsewhere (MCP servers) when
// a turn starts; fields.go has the tool name every provider takes
// (CheckName) and the fields a tool's rules and claims name (Rules,
// Claimed) against its schema's (SchemaFields), for the agent's check;
// demo.go has the demo agent's tools, wait.go the built-in timer tool every
// agent may name.
package tool
