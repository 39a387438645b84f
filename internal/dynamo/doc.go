// Package dynamo stores session facts in DynamoDB: one item per fact under the
// session's partition, appended by a conditional transaction that also rewrites
// a small head item (status, last seq, open turn, when the tick is next due).
// The facts are the truth; the head and its two sparse indexes (byOwner, byDue)
// exist for listing sessions and for the tick. byDue is sharded: a due head's
// partition key is its session's shard (DueShardOf, one of DueShards), and
// Due reads one shard by due time, so the tick's read is not one hot partition. An append may also write an
// idempotency receipt, the answer to the request that made it.
// The claims broker keeps its items on the same table, in a key space of
// its own (see schema.go), but it is package claimsdb's.
package dynamo
