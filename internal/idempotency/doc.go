// Package idempotency is the Idempotency-Key of baton's POSTs, for the
// operator API and the chat endpoint alike: the key check and the request
// digest (Read), the receipt a write stores under the key in its own
// transaction (Record, with session.Store.WithReceipt) and its lookup, which
// refuses a key used for another request (Lookup), and the replay of a
// recorded reply (Reply, Guard). The header names and the key limit are the
// wire contract's (package api); the receipt items are the fact log's
// (dynamo.Receipt, written by the append they guard).
package idempotency
