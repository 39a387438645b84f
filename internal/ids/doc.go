// Package ids makes identifiers for sessions, turns, approvals and messages:
// a short prefix, a millisecond timestamp so ids sort by creation, and
// random bits so concurrent writers never collide.
package ids
