// Package sessionhttp is what baton's HTTP APIs (the operator API and the
// chat endpoint) share about the session store: the status and message
// each session, store and reducer error is answered with (Known). Package
// httpjson holds the rest, which knows nothing of sessions, and package
// idempotency the Idempotency-Key's receipts.
package sessionhttp
