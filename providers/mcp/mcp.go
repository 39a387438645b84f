// Package mcp registers baton's MCP client (package internal/mcp/mcpsdk, on the
// official MCP Go SDK) with a program: host.Config{MCP: mcp.Client()}.
// Only a program that imports it links the MCP SDK.
package mcp

import (
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/mcp/mcpsdk"
)

// Client is baton's MCP client.
func Client() mcp.Dialer { return mcpsdk.Dialer{} }

// IdempotencyKeyMeta is the _meta key under which every tool call baton
// makes to an MCP server carries its idempotency key: a server that
// performs an external effect keys it by this value, so a call redone
// after a crash is done once.
const IdempotencyKeyMeta = mcp.IdempotencyKeyMeta
