// Package cli is the baton command line's client of the operator HTTP API,
// through package api's client and wire types:
// it lists, creates and inspects sessions, posts messages, answers
// approvals, settles uncertain executions, cancels turns, raises spend
// caps, moves timers, sets schedules, exports and deletes sessions, and
// tails a session's turns live over Server-Sent Events, with exit codes a
// script can rely on. Tabular output takes -o table|json|yaml; completion
// prints bash, zsh and fish completion scripts. What the resource claims
// commands (release, orphans, and show's grants) print and do is package
// claimscli's.
package cli
