// Package mcpsdk is baton's MCP client: an mcp.Dialer that reaches remote
// MCP servers over streamable HTTP with the official MCP Go SDK. Dialer.List
// lists a server's allowed tools with their annotations mapped onto baton's
// effects and approval rules (Rules), and Dialer.Adapt makes a listing
// tool.Tools that call the server by name on a fresh session each. A
// program registers it (host.Config.MCP, providers.MCP()); a program that
// does not, such as the operator and the tick, links no MCP SDK.
package mcpsdk
