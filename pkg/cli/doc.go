// Package cli is the baton command line's client of the operator HTTP API:
// it lists, creates and inspects sessions, posts messages, answers
// approvals, settles uncertain executions, cancels turns, raises spend
// caps, moves timers, sets schedules, and tails a session's turns live over
// Server-Sent Events, with exit codes a script can rely on.
package cli
