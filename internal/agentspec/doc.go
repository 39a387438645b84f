// Package agentspec is the one check of an agent's fields: Go agents
// (package baton's Agent) and the agent file's agents (internal/agents)
// both pass it, so both refuse the same values naming the same field
// (among them a tool's mistakes: a claim or an approval rule on a field its
// schema lacks, a name a provider refuses, two tools of one name), and it
// turns a Go agent's tools and MCP servers into what the runner calls.
// It links no AWS SDK.
package agentspec
