// Package lifecycle is the end of a session's life: Delete buries a session
// (its tombstone and the end of its head in one transaction) and then
// purges its child sessions, its facts, receipts, streams and snapshots —
// keeping, as a fence, the last chunk of a stream whose cancelled
// invocation may still run, until its lease has passed, when FinishDelete
// (run by the tick) ends the purge — and Sweep is the retention sweep,
// which also deletes snapshots no fact names.
//
// It decides what goes and runs on three seams: the fact log's tombstone
// items (Log; *dynamo.Store keeps them in its table, since creating a
// session checks its id's tombstone in the create's transaction), the
// stream store's objects (Objects; *streams.Store lists and deletes them),
// and the session store's hooks into child sessions and resource claims
// (Sessions), which package session supplies as its Store's Delete,
// FinishDelete and Sweep.
package lifecycle
