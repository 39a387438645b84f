// Package mcp gives an agent the tools of remote MCP servers, reached over
// streamable HTTP with the official MCP Go SDK. A Server names a URL,
// headers read from the environment and an allow list; Dialer.List lists
// the allowed tools with their annotations mapped onto baton's effects and
// approval rules, and Dialer.Adapt makes a listing tool.Tools that call the
// server by name. A Toolset is an agent's servers as the tool.Source a turn
// lists when it starts; its Approvals are tool.Rules, which fail closed on
// input they cannot read, so a loose schema lets no call past its rule.
package mcp
