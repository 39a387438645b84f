// Package mcptest starts a real MCP server over streamable HTTP for tests,
// built with the same SDK baton's client uses. It offers three tools, one
// read-only, one destructive and one idempotent, plus one no agent should
// be allowed, and records what reached it; a test may change its tools or
// make it answer 503 while it runs.
package mcptest
