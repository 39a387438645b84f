// Package report holds what a replay of a recorded session finds: each
// divergence between the recording and the agent it was replayed against,
// by turn, step and kind, and the report's text and JSON forms. It has no
// engine in it, so the CLI prints a report without linking the session
// store; package replay makes reports, and batontest and `baton replay`
// show them.
package report
