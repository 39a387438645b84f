// Package mcpserve serves a deployment's agents over MCP (Streamable HTTP,
// stateless, on the official Go SDK) at /mcp: each agent the deployment
// chooses is a tool whose input is a message and an optional session, and
// whose result is the turn's final answer. A call made as a task (the
// 2025-11-25 tasks utility, with the tasks extension's tasks/update) is a
// baton session and turn the caller owns, read with tasks/get and
// tasks/result, answered with tasks/update and ended with tasks/cancel; the
// handler answers those methods itself, before the SDK, and serves the
// OAuth protected-resource metadata that names the deployment's JWT issuer.
package mcpserve
