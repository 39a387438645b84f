// Package mcpserve registers baton's MCP endpoint (package
// internal/mcpserve/sdkserve, on the official MCP Go SDK) with a program
// that serves the operator API: host.Config{MCPServer: mcpserve.Server()}.
// Only a program that imports it links the MCP SDK: the operator function
// and the dev server.
package mcpserve

import (
	"github.com/baton-run/baton/internal/mcpserve"
	"github.com/baton-run/baton/internal/mcpserve/sdkserve"
)

// Server is baton's MCP endpoint: the agents BATON_MCP_AGENTS chooses, at
// /mcp (see docs/mcp.md).
func Server() mcpserve.Server { return sdkserve.New }
