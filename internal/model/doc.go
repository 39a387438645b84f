// Package model is baton's seam to language models: a Model streams one
// step's events (text, reasoning, tool calls, a finish with usage) for a
// conversation. Scripted is a deterministic Model played from a file, used by
// tests and the demo agent; real providers live in their own packages.
// Error classifies a failed step, RetryPolicy says how a turn rides out the
// transient ones, and Estimate and Counter size a request's input tokens.
package model
