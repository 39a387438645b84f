// Package testdev runs the dev server (internal/devserver) for a test binary:
// the in-process emulator with resources from the template, the demo agent,
// the operator API, the resume poller and the tick, as `baton dev` runs
// them.
package testdev
