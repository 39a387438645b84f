// Package httpjson holds what baton's HTTP APIs (the operator API and the
// chat endpoint) answer alike: refusals with a status and a message, JSON
// bodies and errors, 404 and 405 in JSON instead of the mux's plain text,
// and the caller check in front of every handler.
package httpjson
