// Package mcp is the configuration side of an agent's remote MCP servers,
// and links no MCP SDK. A Server names a URL, headers read from the
// environment and an allow list, every name of which the server must list
// (a turn's listing fails with an *UnlistedError naming those it does
// not); a Toolset is an agent's servers as the tool.Source a turn lists
// when it starts, and its Approvals are
// tool.Rules, which fail closed on input they cannot read, so a loose
// schema lets no call past its rule. The servers are reached through a
// Dialer the program registers (host.Config.MCP): package
// github.com/baton-run/baton/internal/mcp/mcpsdk is baton's, on the official MCP
// Go SDK, which logs with the App's logger (WithLog). Without one (the
// operator, the tick), every listing and call fails with a *NoDialerError.
package mcp
