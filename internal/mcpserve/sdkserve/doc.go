// Package sdkserve is baton's MCP endpoint (an mcpserve.Server), on the
// official Go SDK in stateless Streamable HTTP mode: each served agent is
// a tool whose input is a message and an optional session, and whose
// result is the turn's final answer. A call made as a task (the
// 2025-11-25 tasks utility, with the tasks extension's tasks/update) is a
// baton session and turn the caller owns, read with tasks/get and
// tasks/result, answered with tasks/update and ended with tasks/cancel;
// the handler answers those methods itself, before the SDK.
package sdkserve
