// Package session rebuilds a session from DynamoDB facts and S3 snapshots,
// and commits its transitions: every fact is checked by the reducer, then
// appended with the compare-and-set, so a transition happens whole, once, or
// not at all. A message posted while a turn is open is delivered as its
// agent's steering policy says (Store.Steering), and a compaction replaces
// the history later loads read (Store.Compact). Every ending of a turn
// records the usage of its billed steps as its stream holds them, whoever
// ends it (Store.End, Store.StreamUsage), and a raise of spend caps must
// lift the cap the turn reached (Store.Raise). Store.Delete buries a
// session (tombstone and head in one transaction) and then purges its facts,
// receipts, streams and snapshots; Store.Sweep is the retention sweep. The
// operator API and the turn runner both go through it.
package session
