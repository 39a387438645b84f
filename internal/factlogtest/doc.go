// Package factlogtest is the fact-log contract: the cases every
// session.FactLog passes, the DynamoDB store (internal/dynamo, on the
// emulator) and the one in memory (internal/memstore) alike. Each case
// asserts what a caller relies on: the compare-and-set, receipts,
// orderings, the indexes, and deletion.
package factlogtest
