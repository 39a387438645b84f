package streams

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// BucketType is the kind of S3 bucket a Store keeps its objects in.
type BucketType string

// The bucket types a Store supports.
const (
	// Standard is a general purpose bucket: ListObjectsV2 returns keys in
	// order and honours StartAfter.
	Standard BucketType = "Standard"
	// Express is an S3 Express One Zone directory bucket: ListObjectsV2
	// returns keys in no particular order and refuses StartAfter. Its
	// PutObject supports If-None-Match: *, so the one-writer guarantee
	// holds unchanged.
	Express BucketType = "Express"
)

// expressSuffix ends the name of every directory bucket in an Availability
// Zone (<base>--<az-id>--x-s3).
const expressSuffix = "--x-s3"

// ParseBucketType parses a bucket type: "Standard" (or empty) or "Express",
// case-insensitively. A bucket named like a directory bucket (…--x-s3) is
// Express whatever s says, since listing it in order cannot work. Anything
// else is refused with an error wrapping ErrInvalid.
func ParseBucketType(s, bucket string) (BucketType, error) {
	var t BucketType
	switch {
	case s == "" || strings.EqualFold(s, string(Standard)):
		t = Standard
	case strings.EqualFold(s, string(Express)):
		t = Express
	default:
		return "", fmt.Errorf("%w: bucket type %q: want %s or %s", ErrInvalid, s, Standard, Express)
	}
	if strings.HasSuffix(bucket, expressSuffix) {
		t = Express
	}
	return t, nil
}

// NewExpress returns a Store on the S3 Express One Zone directory bucket
// bucket. It reads streams without depending on listing order or
// StartAfter: Read and Resume fetch chunks by index (chunk indices are
// dense) until a chunk is missing or closes the stream, and ReadBack and
// Streams list every key of the prefix and sort them here.
func NewExpress(client S3, bucket string) *Store {
	return &Store{client: client, bucket: bucket, directory: true}
}

// NewOfType returns a Store on bucket of type t.
func NewOfType(client S3, bucket string, t BucketType) *Store {
	if t == Express {
		return NewExpress(client, bucket)
	}
	return New(client, bucket)
}

// Type returns the type of the store's bucket.
func (s *Store) Type() BucketType {
	if s.directory {
		return Express
	}
	return Standard
}

// chunksFrom reads a stream's chunks from index first on, in order: all of
// them, or at most limit when limit is positive, with more reporting that
// the stream has chunks after those. It is the one place that decides how
// a stream's chunks are found: by an ordered listing on a general purpose
// bucket, by index on a directory bucket.
func (s *Store) chunksFrom(ctx context.Context, session, stream string, first, limit int) (docs []chunkDoc, more bool, err error) {
	if s.directory {
		docs, err = s.probeChunks(ctx, session, stream, first, limit)
		if err != nil {
			return nil, false, err
		}
		if limit > 0 && len(docs) > limit {
			return docs[:limit], true, nil
		}
		return docs, false, nil
	}
	keys, err := s.listChunks(ctx, session, stream, first, limit)
	if err != nil {
		return nil, false, err
	}
	if limit > 0 && len(keys) > limit {
		keys, more = keys[:limit], true
	}
	docs, err = s.getChunks(ctx, keys)
	return docs, more, err
}

// probeChunks reads chunks first, first+1, … by key without listing, a
// window at a time (one chunk, one more, then two, four, up to
// getConcurrency in flight), until a chunk is missing, one closes the
// stream, or it has limit+1 (limit positive). A chunk missing before a
// present one in the same window is corruption (see getPresent); a gap at a
// window's end reads as the end of the stream, as only a listing could
// tell the two apart (the sink never leaves a gap: it writes chunk n+1
// only once chunk n is stored). On a directory bucket a
// GetObject costs about a fortieth of a ListObjectsV2, so a live reader's
// poll costs a GetObject for its cursor's chunk, one per new chunk and one
// or two for chunks not yet written (two in all when nothing is new); a
// read of a long stream asks in its last window for at most
// getConcurrency chunks that do not exist (getConcurrency-1 when the
// stream is closed).
func (s *Store) probeChunks(ctx context.Context, session, stream string, first, limit int) ([]chunkDoc, error) {
	var docs []chunkDoc
	for round, window := 0, 1; ; round++ {
		if round > 1 {
			window = min(window*2, getConcurrency)
		}
		if limit > 0 {
			window = min(window, limit+1-len(docs))
		}
		n := first + len(docs)
		keys := make([]string, 0, window)
		for i := range window {
			keys = append(keys, ChunkKey(session, stream, n+i))
		}
		got, missing, err := s.getPresent(ctx, keys)
		if err != nil {
			return nil, err
		}
		for i, d := range got {
			docs = append(docs, d)
			if d.Closed != Open && i < len(got)-1 {
				return nil, fmt.Errorf("%w: chunk %d follows the closing chunk %d", ErrCorrupt, n+i+1, n+i)
			}
		}
		if missing || (len(docs) > 0 && docs[len(docs)-1].Closed != Open) || (limit > 0 && len(docs) > limit) {
			return docs, nil
		}
	}
}

// getPresent reads keys, which name consecutive chunks, at once, and
// returns the ones before the first missing one; missing reports there was
// one. A chunk found missing before one found present is read again: the
// concurrent GETs may have raced a live writer, which stores chunk n before
// it writes n+1. Still missing, it is a gap, and corruption.
func (s *Store) getPresent(ctx context.Context, keys []string) (docs []chunkDoc, missing bool, err error) {
	docs = make([]chunkDoc, len(keys))
	found := make([]bool, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() { docs[i], found[i], errs[i] = s.getIfPresent(ctx, key) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	last := len(found) - 1
	for last >= 0 && !found[last] {
		last--
	}
	for i := 0; i < last; i++ {
		if found[i] {
			continue
		}
		if docs[i], found[i], err = s.getIfPresent(ctx, keys[i]); err != nil {
			return nil, false, err
		}
		if !found[i] {
			return nil, false, fmt.Errorf("%w: %s missing before %s", ErrCorrupt, keys[i], keys[last])
		}
	}
	if last == len(keys)-1 {
		return docs, false, nil
	}
	return docs[:last+1], true, nil
}

// getIfPresent reads the chunk at key; found is false when there is none.
func (s *Store) getIfPresent(ctx context.Context, key string) (doc chunkDoc, found bool, err error) {
	doc, err = s.getChunk(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return chunkDoc{}, false, nil
	}
	return doc, err == nil, err
}
