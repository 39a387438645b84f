package session

import (
	"context"

	lc "github.com/baton-run/baton/internal/lifecycle"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds StreamStore, the turn-stream store the store consumes
// (*streams.Store is one).

// StreamStore is what the session layer needs of a turn-stream store: open
// a new stream, resume one after its last chunk, read parts after a
// cursor, read the newest parts back, list a session's streams, and keep
// snapshots. Every chunk is written with If-None-Match, so a chunk is
// never overwritten and a stale writer is poisoned; the sinks the session
// store hands out write their chunks through WriteChunk, so a decorator of
// the stream store (see Store.Decorate) sees every flush and close too.
//
// *streams.Store implements it on both bucket types: streams.New on an S3
// Standard (general purpose) bucket, streams.NewExpress on an S3 Express
// One Zone directory bucket, whose reads depend on neither listing order
// nor StartAfter. One contract suite (pkg/streams/contract_test.go) runs
// against both.
type StreamStore interface {
	Open(session, stream string) *streams.Sink
	WriteChunk(ctx context.Context, c streams.Chunk) (*streams.Stored, error)
	Resume(ctx context.Context, session, stream string) (*streams.Sink, []parts.Part, error)
	Read(ctx context.Context, session, stream string, after streams.Cursor) (streams.Page, error)
	ReadChunks(ctx context.Context, session, stream string, after streams.Cursor, maxChunks int) (streams.Page, error)
	ReadBack(ctx context.Context, session, stream string, chunks int, visit func(parts.Part) bool) (whole bool, err error)
	Streams(ctx context.Context, session string) ([]streams.Info, error)
	PutSnapshot(ctx context.Context, key string, v any) error
	GetSnapshot(ctx context.Context, key string, v any) error

	// Deletion and retention (see Store.Delete and Store.Sweep).
	lc.Objects
}

var _ StreamStore = (*streams.Store)(nil)
