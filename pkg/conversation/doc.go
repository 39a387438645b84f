// Package conversation rebuilds the model's input from durable state: the
// messages of ended turns (a snapshot), the open turn's user messages, and
// the parts of its stream. Replay is pure and deterministic, so the same
// durable state gives byte-identical model input in every invocation; a
// Replayer folds the parts as they are written, to the same result: it
// takes a part's tool input and output as a stored part reads back
// (parts.Recorded), never as the tool or the model spelled them. Cut,
// Transcript and Summary shape the history a compaction replaces.
package conversation
