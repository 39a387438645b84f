// Package mcp registers baton's MCP client (package pkg/mcp/mcpsdk, on the
// official MCP Go SDK) with a program: baton.Config{MCP: mcp.Client()}.
// Only a program that imports it links the MCP SDK.
package mcp

import (
	"github.com/baton-run/baton/pkg/mcp"
	"github.com/baton-run/baton/pkg/mcp/mcpsdk"
)

// Client is baton's MCP client.
func Client() mcp.Dialer { return mcpsdk.Dialer{} }
