package streams

import (
	"context"
	"fmt"
)

// Chunk is one chunk object a Sink writes: chunk Index of a stream, its
// encoded body, and the tag of the sink writing it.
type Chunk struct {
	Session, Stream string
	Index           int
	Body            []byte
	Writer          string
}

// Key is the chunk's object key (see ChunkKey).
func (c Chunk) Key() string { return ChunkKey(c.Session, c.Stream, c.Index) }

// Stored is the chunk object a write found in its place: its body and the
// tag of the sink that wrote it.
type Stored struct {
	Body   []byte
	Writer string
}

// ChunkWriter writes a sink's chunks. A Store is one; so is a stream store
// a decorator wraps (package session's StreamStore), so that the decorator
// sees every chunk write (see Sink.WriteThrough).
type ChunkWriter interface {
	// WriteChunk writes c with If-None-Match, so that it never replaces a
	// chunk. When c's key is taken it writes nothing and returns the
	// object there, for the sink to tell its own earlier write (an answer
	// lost) from another writer's; when the write lands, nil.
	WriteChunk(ctx context.Context, c Chunk) (*Stored, error)
}

// WriteChunk writes c unless its key is taken, in one PutObject, and reads
// the object in its place with one GetObject when it is.
func (s *Store) WriteChunk(ctx context.Context, c Chunk) (*Stored, error) {
	key := c.Key()
	taken, err := s.putNew(ctx, key, c.Body, c.Writer)
	if err != nil || !taken {
		return nil, err
	}
	body, meta, err := s.getObjectMeta(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("taken; read it to see by whom: %w", err)
	}
	return &Stored{Body: body, Writer: meta[writerMeta]}, nil
}

// WriteThrough has the sink write its chunks through w from now on: a
// decorated stream store, which sees each flush and close. A sink writes
// through the Store that opened it until then.
func (k *Sink) WriteThrough(w ChunkWriter) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.out = w
}
