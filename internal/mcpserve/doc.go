// Package mcpserve is the configuration side of serving a deployment's
// agents over MCP at /mcp, and links no MCP SDK: which agents (Select,
// BATON_MCP_AGENTS), the paths and routes, the OAuth protected-resource
// metadata and the 401 that points to it. The endpoint itself is a Server
// the program registers (host.Config.MCPServer): package sdkserve's, on
// the official Go SDK; without one, /mcp answers 501.
package mcpserve
