// Package memstore is baton's storage in memory, for the engine's tests: a
// fact log (Log) with the semantics of internal/dynamo.Store, a bucket
// (Bucket) with the semantics of the S3 calls pkg/streams makes, so the
// real stream store runs unchanged on it, and a wake queue (Wakes). Log
// and Bucket pass the contract suites the DynamoDB and S3 stores pass;
// all three read the time from a clock.Clock.
package memstore
