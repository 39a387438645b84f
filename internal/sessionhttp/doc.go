// Package sessionhttp is what baton's HTTP APIs (the operator API and the
// chat endpoint) share about the session store: the status and message
// each session, store and reducer error is answered with (Known), and the
// Idempotency-Key's receipts, read from the store and written with the
// write they guard (Receipt, Writer). Package httpjson holds the rest, which
// knows nothing of sessions.
package sessionhttp
