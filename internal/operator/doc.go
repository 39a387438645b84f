// Package operator serves baton's operator HTTP API as one http.Handler:
// create, list and inspect sessions, post messages, answer approvals, settle
// uncertain executions, cancel turns, export and delete sessions, and read
// turn streams as JSON or as
// Server-Sent Events; it mounts internal/chat's AI SDK chat endpoint under /chat
// and serves the web console (package console) at /console and the agents
// over MCP (internal/mcpserve) at /mcp. A session is
// visible only to the identity that created it, every request is checked
// before anything is written, and a POST retried under its Idempotency-Key
// is answered again without writing. A request the session store does not
// answer within the request budget gets 503 with Retry-After, and an event
// stream sends a comment heartbeat while it waits. What it answers and
// takes are package api's wire types.
package operator
