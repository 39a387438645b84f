// Package mcp gives an agent the tools of remote MCP servers, reached over
// streamable HTTP with the official MCP Go SDK. A Server names a URL,
// headers read from the environment and an allow list; Dialer.Tools lists
// the allowed tools, maps their annotations onto baton's effects and
// approval rules, and adapts each one to a tool.Tool the runner calls like
// any other.
package mcp
