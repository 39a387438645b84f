// Package api is baton's operator HTTP API as a Go program meets it: the
// JSON bodies its routes take and answer (sessions, turns, approvals,
// executions, claims, orphaned grants, stream pages, exports and the error
// body; the chat endpoint's request and messages), and Client, a small
// typed client of the operator routes. It links no storage SDK, so a
// program that only calls the API stays small.
package api
