// Package memtable is a DynamoDB table in memory with the calls the claims
// broker makes (claimsdb.API): GetItem, and PutItem and
// TransactWriteItems of version-checked puts. The broker's own tests run
// on it and on the emulator alike, and the engine's tests keep their
// claims on it.
package memtable
