package streams

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/baton-run/baton/internal/parts"
)

// Sink writes one stream. It buffers parts in memory and writes them as the
// stream's next chunk object on Flush or Close, with If-None-Match: * so a
// chunk is never overwritten: a writer that finds its chunk taken is stale,
// reports ErrChunkTaken and is poisoned for good.
//
// A Sink is safe for concurrent use; Append waits while a Flush is in
// flight.
type Sink struct {
	out     ChunkWriter // writes the chunks: the opening Store, or what WriteThrough set
	session string
	stream  string

	mu      sync.Mutex
	invalid error // a bad session or stream id, reported by every call
	next    int
	buf     []parts.Part
	closed  Status
	poison  *ChunkTakenError // the lost race that poisoned the sink
	puts    int
	writer  string // tags this sink's chunk objects
	// tried holds the bodies of this sink's writes of chunk next whose
	// outcome is unknown (the request failed without S3's answer). Their
	// parts are buf[:tried[i].parts] and are frozen: nothing is coalesced
	// into them.
	tried []attempt
}

// attempt is a chunk write that may or may not have landed.
type attempt struct {
	body   []byte
	parts  int
	closed Status
}

// Open returns a sink for a brand-new stream: its first chunk is index 0.
// It does no I/O; the stream exists from its first written chunk. A bad
// session or stream id (empty, or containing '/') is reported by every
// later call.
func (s *Store) Open(session, stream string) *Sink {
	k := &Sink{out: s, session: session, stream: stream, writer: newWriterID()}
	if err := checkID("session", session); err != nil {
		k.invalid = err
	} else if err := checkID("stream", stream); err != nil {
		k.invalid = err
	}
	return k
}

// Resume lists and reads an existing stream's chunks and returns a sink that
// continues after the last one, with all durable parts in order. The sink's
// Closed reports how the stream was closed, if it was. A stream with no
// chunks resumes like Open. It costs one ListObjectsV2 per 1000 chunks and
// one GetObject per chunk (on Express, no listing, and up to 8 GetObjects
// more for chunks not yet written).
func (s *Store) Resume(ctx context.Context, session, stream string) (*Sink, []parts.Part, error) {
	k := s.Open(session, stream)
	if k.invalid != nil {
		return nil, nil, fmt.Errorf("streams: resume %s/%s: %w", session, stream, k.invalid)
	}
	docs, _, err := s.chunksFrom(ctx, session, stream, 0, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("streams: resume %s/%s: %w", session, stream, err)
	}
	var ps []parts.Part
	for i, d := range docs {
		if d.Closed != Open && i != len(docs)-1 {
			return nil, nil, fmt.Errorf("streams: resume %s/%s: %w: chunk %d follows the closing chunk %d",
				session, stream, ErrCorrupt, i+1, i)
		}
		ps = append(ps, d.Parts...)
	}
	k.next = len(docs)
	if len(docs) > 0 {
		k.closed = docs[len(docs)-1].Closed
	}
	return k, ps, nil
}

// Append buffers parts; it does no I/O. A text-delta or reasoning-delta is
// coalesced into the previous buffered part when that is a delta of the same
// type and block ID (and the same provider metadata, with no other fields
// set): their Deltas are concatenated. Append refuses parts without a type,
// and fails with ErrClosed on a closed sink and ErrPoisoned on a poisoned
// one.
func (k *Sink) Append(ps ...parts.Part) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.usable("append to"); err != nil {
		return err
	}
	if k.closed != Open {
		return fmt.Errorf("streams: append to %s/%s: %w (%s)", k.session, k.stream, ErrClosed, k.closed)
	}
	for _, a := range k.tried {
		if a.closed != Open {
			return fmt.Errorf("streams: append to %s/%s: %w: a close (%s) may have landed; retry Close",
				k.session, k.stream, ErrClosed, a.closed)
		}
	}
	for i, p := range ps {
		if p.Type == "" {
			return fmt.Errorf("streams: append to %s/%s: %w: part %d has no type", k.session, k.stream, ErrInvalid, i)
		}
	}
	for _, p := range ps {
		if n := len(k.buf); n > k.frozen() && coalesces(k.buf[n-1], p) {
			k.buf[n-1].Delta += p.Delta
			continue
		}
		k.buf = append(k.buf, p)
	}
	return nil
}

// coalesces reports whether delta part p can be merged into prev.
func coalesces(prev, p parts.Part) bool {
	if p.Type != parts.TextDelta && p.Type != parts.ReasoningDelta {
		return false
	}
	return prev.Type == p.Type && prev.ID == p.ID &&
		bytes.Equal(prev.ProviderMetadata, p.ProviderMetadata) &&
		deltaOnly(prev) && deltaOnly(p)
}

// deltaOnly reports whether p sets nothing a merge would lose: no field but
// Type, ID, Delta and ProviderMetadata.
func deltaOnly(p parts.Part) bool {
	return p.MessageID == "" && p.ToolCallID == "" && p.ToolName == "" &&
		p.Input == nil && p.Output == nil && p.ErrorText == "" &&
		p.ApprovalID == "" && p.Approved == nil && p.Reason == "" &&
		p.FinishReason == "" && p.MessageMetadata == nil && p.Data == nil
}

// Flush writes the buffered parts as the stream's next chunk with exactly
// one PutObject; with nothing buffered it does nothing. When the chunk is
// already taken it returns a *ChunkTakenError and poisons the sink. On any
// other failure the parts stay buffered and Flush may be retried; should the
// failed write have landed after all, the retry recognises its own chunk
// instead of reporting a lost race.
func (k *Sink) Flush(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.usable("flush"); err != nil {
		return err
	}
	if len(k.buf) == 0 {
		return nil
	}
	return k.write(ctx, Open)
}

// Close writes the buffered parts and the close marker as one chunk. Closing
// a closed sink, or one resumed from a closed stream, does nothing and
// returns nil. A sink that never wrote a chunk and has nothing buffered
// writes nothing: it is only marked closed, since a stream exists from its
// first chunk. status must not be Open.
func (k *Sink) Close(ctx context.Context, status Status) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.usable("close"); err != nil {
		return err
	}
	if status == Open {
		return fmt.Errorf("streams: close %s/%s: %w: empty status", k.session, k.stream, ErrInvalid)
	}
	if k.closed != Open {
		return nil
	}
	if k.next == 0 && len(k.buf) == 0 && len(k.tried) == 0 {
		k.closed = status
		return nil
	}
	return k.write(ctx, status)
}

// usable reports why the sink cannot be used, if it cannot.
func (k *Sink) usable(op string) error {
	if k.invalid != nil {
		return fmt.Errorf("streams: %s %s/%s: %w", op, k.session, k.stream, k.invalid)
	}
	if k.poison != nil {
		// Wrap the lost race too, so errors.Is(err, ErrChunkTaken) and
		// errors.As(err, **ChunkTakenError) keep saying what happened.
		return fmt.Errorf("streams: %s %s/%s: %w: %w", op, k.session, k.stream, ErrPoisoned, k.poison)
	}
	return nil
}

func (k *Sink) frozen() int {
	if len(k.tried) == 0 {
		return 0
	}
	return k.tried[len(k.tried)-1].parts
}

// write puts the buffer, closed with status unless it is Open, as chunk
// k.next. The caller holds k.mu.
//
// Every write is tagged with the sink's writer id. When the chunk turns out
// taken, one GetObject tells whether this sink took it — a write whose
// answer was lost, retried by the SDK or by the caller — and if so which
// attempt landed; only a chunk written by someone else poisons the sink.
func (k *Sink) write(ctx context.Context, status Status) error {
	op := "flush"
	if status != Open {
		op = "close"
	}
	if k.next >= maxChunks {
		return fmt.Errorf("streams: %s %s/%s: %w: chunk index %d out of range", op, k.session, k.stream, ErrInvalid, k.next)
	}
	ps := k.buf
	if ps == nil {
		ps = []parts.Part{}
	}
	body, err := json.Marshal(chunkDoc{Parts: ps, Closed: status})
	if err != nil {
		return fmt.Errorf("streams: %s %s/%s: encode chunk %d: %w", op, k.session, k.stream, k.next, err)
	}
	if n := len(k.tried); n == 0 || !bytes.Equal(k.tried[n-1].body, body) {
		k.tried = append(k.tried, attempt{body: body, parts: len(k.buf), closed: status})
	}
	c := Chunk{Session: k.session, Stream: k.stream, Index: k.next, Body: body, Writer: k.writer}
	k.puts++
	found, err := k.out.WriteChunk(ctx, c)
	switch {
	case err != nil:
		return fmt.Errorf("streams: %s chunk %d of %s/%s: %w", op, k.next, k.session, k.stream, err)
	case found == nil:
		k.committed(len(k.buf), status)
		return nil
	}
	if found.Writer != k.writer {
		return k.lost(c.Key())
	}
	for _, a := range k.tried {
		if !bytes.Equal(found.Body, a.body) {
			continue
		}
		k.committed(a.parts, a.closed)
		if len(k.buf) == 0 && (status == Open || k.closed != Open) {
			return nil // all written; a close that landed earlier stands
		}
		if k.closed != Open {
			// Append refuses parts once a close was tried, so this is
			// unreachable; never lose parts silently all the same.
			return fmt.Errorf("streams: %s %s/%s: %w (%s) by an earlier attempt with %d parts unwritten",
				op, k.session, k.stream, ErrClosed, k.closed, len(k.buf))
		}
		return k.write(ctx, status)
	}
	return fmt.Errorf("streams: %s chunk %d of %s/%s: %w: written by this sink but matching none of its attempts",
		op, k.next, k.session, k.stream, ErrCorrupt)
}

// committed records that the first n buffered parts landed as chunk
// k.next, closing the stream with status unless it is Open.
func (k *Sink) committed(n int, status Status) {
	k.buf = append([]parts.Part(nil), k.buf[n:]...)
	if len(k.buf) == 0 {
		k.buf = nil
	}
	k.tried = nil
	k.next++
	if status != Open {
		k.closed = status
	}
}

// lost poisons the sink after chunk k.next at key turned out taken.
func (k *Sink) lost(key string) error {
	err := &ChunkTakenError{Key: key, Index: k.next}
	k.poison = err
	k.buf = nil
	k.tried = nil
	return fmt.Errorf("streams: %s/%s: %w", k.session, k.stream, err)
}

func newWriterID() string {
	var b [12]byte
	// crypto/rand.Read never returns an error (Go 1.24+ crashes instead).
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Next returns the index of the next chunk the sink will write.
func (k *Sink) Next() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.next
}

// Closed returns how the stream was closed, or Open.
func (k *Sink) Closed() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.closed
}

// Stream returns the stream id.
func (k *Sink) Stream() string { return k.stream }

// Session returns the session id.
func (k *Sink) Session() string { return k.session }

// Buffered returns how many parts wait for the next write.
func (k *Sink) Buffered() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.buf)
}

// Puts returns how many PutObject requests the sink has made.
func (k *Sink) Puts() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.puts
}

// IsStale reports whether err says a writer lost a chunk race, now or
// earlier (ErrChunkTaken or ErrPoisoned).
func IsStale(err error) bool {
	return errors.Is(err, ErrChunkTaken) || errors.Is(err, ErrPoisoned)
}
