// Package httpjson holds what baton's HTTP APIs (the operator API and the
// chat endpoint) answer alike, knowing nothing of what they serve:
// refusals with a status and a message, the one table from an error to its
// status and message (Status, Fail; each API passes its Words and the table
// of its own errors), JSON bodies and errors, 404 and 405 in JSON instead
// of the mux's plain text, the caller check in front of every handler, request
// bodies read under a limit, CORS policies, the request
// budget and Retry-After of a store that does not answer, and event
// streams with a comment heartbeat.
package httpjson
