// Package dynamo stores session facts in DynamoDB: one item per fact under the
// session's partition, appended by a conditional transaction that also rewrites
// a small head item (status, last seq, open turn, when the tick is next due).
// The facts are the truth; the head and its two sparse indexes (byOwner, byDue)
// exist for listing sessions and for the tick. An append may also write an
// idempotency receipt, the answer to the request that made it.
package dynamo
