package session

import (
	"context"
	"errors"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds the store's turn-stream methods: open, resume, read and
// close a turn's stream in the stream store.

// OpenStream starts turn stream stream of session id, for a writer that
// owns it from its first chunk. The sink writes its chunks through the
// store's stream store (StreamStore.WriteChunk).
func (s *stores) OpenStream(id, stream string) *streams.Sink {
	sink := s.streams.Open(id, stream)
	sink.WriteThrough(s.streams)
	return sink
}

// ResumeStream continues stream of session id after its last chunk, and
// returns the parts already in it. The sink writes its chunks through the
// store's stream store.
func (s *stores) ResumeStream(ctx context.Context, id, stream string) (*streams.Sink, []parts.Part, error) {
	sink, ps, err := s.streams.Resume(ctx, id, stream)
	if err != nil {
		return nil, nil, err
	}
	sink.WriteThrough(s.streams)
	return sink, ps, nil
}

// ReadStream returns the parts of stream of session id after cursor after.
func (s *stores) ReadStream(ctx context.Context, id, stream string, after streams.Cursor) (streams.Page, error) {
	return s.streams.Read(ctx, id, stream, after)
}

// Streams lists session id's turn streams.
func (s *stores) Streams(ctx context.Context, id string) ([]streams.Info, error) {
	return s.streams.Streams(ctx, id)
}

// CloseStream ends a turn's stream with a finish part and status. A live
// runner may still be flushing steps to it: when a chunk it wrote takes the
// index, the stream is resumed after it and closed again, a few times.
func (s *stores) CloseStream(ctx context.Context, sink *streams.Sink, status streams.Status, reason string) error {
	var err error
	for range 5 {
		if err = sink.Append(parts.Part{Type: parts.Finish, FinishReason: reason}); err == nil {
			err = sink.Close(ctx, status)
		}
		if errors.Is(err, streams.ErrClosed) || (err == nil) {
			return nil
		}
		if !errors.Is(err, streams.ErrChunkTaken) {
			return err
		}
		if sink, _, err = s.ResumeStream(ctx, sink.Session(), sink.Stream()); err != nil {
			return err
		}
		if sink.Closed() != streams.Open {
			return nil
		}
	}
	return err
}
