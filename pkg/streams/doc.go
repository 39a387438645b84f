// Package streams stores turn streams in S3: a Sink buffers protocol parts
// (defined in package parts) and flushes them as numbered chunk objects
// written with If-None-Match, so a chunk is never overwritten and a stale
// writer finds out; a Live flushes a sink while parts arrive, at most once
// per interval, with a leading and a trailing edge; Read returns a
// stream's parts after a cursor, and ReadBack visits them newest first. It
// also stores the conversation snapshots a turn leaves when it ends.
// SessionObjects lists a session's objects, DeleteObject deletes one and
// Snapshots lists every snapshot, for the end of a session's life, which
// decides what goes (internal/lifecycle).
//
// A Store works on an S3 Standard bucket (New) or an S3 Express One Zone
// directory bucket (NewExpress, or NewOfType with the BucketType). On a
// directory bucket, whose listings are unordered and refuse StartAfter,
// Read and Resume find chunks by index, without listing, and ReadBack and
// Streams list the whole prefix and sort it. Package session declares the
// StreamStore interface both satisfy. A Store makes its S3 calls through
// the S3 interface (an *s3.Client, or internal/memstore's bucket in
// memory), and a Sink writes its chunks through a ChunkWriter (its Store,
// or the decorated stream store it was handed out by).
package streams
