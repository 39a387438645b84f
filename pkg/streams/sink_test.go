package streams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/parts"
)

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func decodeChunk(t *testing.T, raw []byte) chunkDoc {
	t.Helper()
	var d chunkDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("decode chunk %s: %v", raw, err)
	}
	return d
}

func entryCursors(p Page) []Cursor {
	out := make([]Cursor, len(p.Entries))
	for i, e := range p.Entries {
		out[i] = e.Cursor
	}
	return out
}

func TestAppendFlushReadRoundTrip(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess, stream := session(), "turn-1"
	k := store.Open(sess, stream)
	if k.Next() != 0 || k.Closed() != Open || k.Stream() != stream {
		t.Fatalf("fresh sink: next %d closed %q stream %q", k.Next(), k.Closed(), k.Stream())
	}

	// Chunk 0: three text-deltas of block a coalesce into one.
	mustAppend(t, k,
		parts.Part{Type: parts.Start, MessageID: "turn-1"},
		parts.Part{Type: parts.StartStep},
		parts.Part{Type: parts.TextStart, ID: "a"},
		text("a", "Hel"), text("a", "lo"))
	mustAppend(t, k, text("a", " world"))
	if n := k.Buffered(); n != 4 {
		t.Fatalf("buffered %d parts, want 4 after coalescing", n)
	}
	mustFlush(t, k)
	chunk0 := []parts.Part{{Type: parts.Start, MessageID: "turn-1"}, {Type: parts.StartStep}, {Type: parts.TextStart, ID: "a"}, text("a", "Hello world")}
	if got, want := asJSON(t, decodeChunk(t, rawChunk(t, sess, stream, 0))), asJSON(t, chunkDoc{Parts: chunk0}); got != want {
		t.Fatalf("chunk 0 =\n%s\nwant\n%s", got, want)
	}
	if k.Next() != 1 || k.Puts() != 1 {
		t.Fatalf("after one flush: next %d puts %d, want 1 1", k.Next(), k.Puts())
	}
	// Flushing nothing writes nothing.
	mustFlush(t, k)
	if k.Puts() != 1 || k.Next() != 1 {
		t.Fatalf("empty flush wrote: next %d puts %d", k.Next(), k.Puts())
	}

	// Chunk 1: a delta after a flush starts a new part; it is not merged
	// into the durable one.
	mustAppend(t, k, text("a", "!"), parts.Part{Type: parts.TextEnd, ID: "a"}, parts.Part{Type: parts.FinishStep})
	mustFlush(t, k)

	page, err := store.Read(ctx, sess, stream, "0.3")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := entryCursors(page), []Cursor{"1.0", "1.1", "1.2"}; asJSON(t, got) != asJSON(t, want) {
		t.Fatalf("read after 0.3: cursors %v, want %v", got, want)
	}
	if page.Cursor != "1.2" || page.Closed != Open {
		t.Fatalf("read after 0.3: cursor %q closed %q", page.Cursor, page.Closed)
	}
	if page.Entries[0].Part.Delta != "!" {
		t.Fatalf("read after 0.3: first part %+v, want the \"!\" delta", page.Entries[0].Part)
	}

	// Chunk 2, and chunk 3 which closes the stream.
	tool := parts.Part{Type: parts.ToolInputAvailable, ToolCallID: "c1", ToolName: "echo", Input: json.RawMessage(`{"x":1}`)}
	mustAppend(t, k, tool)
	mustFlush(t, k)
	mustAppend(t, k, parts.Part{Type: parts.Finish, FinishReason: "stop"})
	if err := k.Close(ctx, Completed); err != nil {
		t.Fatal(err)
	}
	if k.Next() != 4 || k.Puts() != 4 || k.Closed() != Completed {
		t.Fatalf("after close: next %d puts %d closed %q", k.Next(), k.Puts(), k.Closed())
	}

	all := append(append(chunk0, text("a", "!"), parts.Part{Type: parts.TextEnd, ID: "a"}, parts.Part{Type: parts.FinishStep}, tool),
		parts.Part{Type: parts.Finish, FinishReason: "stop"})
	page, err = store.Read(ctx, sess, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	wantCursors := []Cursor{"0.0", "0.1", "0.2", "0.3", "1.0", "1.1", "1.2", "2.0", "3.0"}
	if got := entryCursors(page); asJSON(t, got) != asJSON(t, wantCursors) {
		t.Fatalf("read all: cursors %v, want %v", got, wantCursors)
	}
	ps := make([]parts.Part, len(page.Entries))
	for i, e := range page.Entries {
		ps[i] = e.Part
	}
	if got, want := asJSON(t, ps), asJSON(t, all); got != want {
		t.Fatalf("read all: parts\n%s\nwant\n%s", got, want)
	}
	if page.Cursor != "3.0" || page.Closed != Completed {
		t.Fatalf("read all: cursor %q closed %q", page.Cursor, page.Closed)
	}

	page, err = store.Read(ctx, sess, stream, "1.1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := entryCursors(page), []Cursor{"1.2", "2.0", "3.0"}; asJSON(t, got) != asJSON(t, want) {
		t.Fatalf("read after 1.1: cursors %v, want %v", got, want)
	}

	// Nothing after the last part: the input cursor comes back, with the
	// close status.
	page, err = store.Read(ctx, sess, stream, "3.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 0 || page.Cursor != "3.0" || page.Closed != Completed {
		t.Fatalf("read after 3.0: %+v", page)
	}

	// Resume sees every durable part and continues after the last chunk.
	r, got, err := store.Resume(ctx, sess, stream)
	if err != nil {
		t.Fatal(err)
	}
	if asJSON(t, got) != asJSON(t, all) || r.Next() != 4 || r.Closed() != Completed {
		t.Fatalf("resume: next %d closed %q parts %s", r.Next(), r.Closed(), asJSON(t, got))
	}
}

func TestReadListsOnlyFromTheCursorsChunk(t *testing.T) {
	ctx := t.Context()
	sess, stream := session(), "s"
	k := sharedStore().Open(sess, stream)
	for i := range 5 {
		mustAppend(t, k, parts.Part{Type: parts.StartStep}, parts.Part{Type: parts.FinishStep, ID: string(rune('a' + i))})
		mustFlush(t, k)
	}
	store, rec := recordedStore(1)
	page, err := store.Read(ctx, sess, stream, "3.1")
	if err != nil {
		t.Fatal(err)
	}
	if got := entryCursors(page); asJSON(t, got) != `["4.0","4.1"]` {
		t.Fatalf("read after 3.1: %v", got)
	}
	// Chunks 3 and 4 only: StartAfter skips 0..2.
	if rec.count("LIST") != 1 || rec.count("GET") != 2 {
		t.Fatalf("read after 3.1 made %d lists and %d gets, want 1 and 2", rec.count("LIST"), rec.count("GET"))
	}

	rec.reset()
	if _, _, err := store.Resume(ctx, sess, stream); err != nil {
		t.Fatal(err)
	}
	if rec.count("LIST") != 1 || rec.count("GET") != 5 || rec.count("PUT") != 0 {
		t.Fatalf("resume of 5 chunks: %v, want 1 list and 5 gets", rec.counts)
	}
}

func TestResumePagesPastAThousandChunks(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1003 chunks")
	}
	ctx := t.Context()
	sess, stream := session(), "long"
	k := sharedStore().Open(sess, stream)
	const n = 1003
	for i := range n {
		mustAppend(t, k, parts.Part{Type: Data(i)})
		mustFlush(t, k)
	}
	store, rec := recordedStore(1)
	r, ps, err := store.Resume(ctx, sess, stream)
	if err != nil {
		t.Fatal(err)
	}
	if r.Next() != n || len(ps) != n {
		t.Fatalf("resume: next %d, %d parts; want %d", r.Next(), len(ps), n)
	}
	for i, p := range ps {
		if p.Type != Data(i) {
			t.Fatalf("part %d is %q, want %q", i, p.Type, Data(i))
		}
	}
	if rec.count("LIST") != 2 || rec.count("GET") != n {
		t.Fatalf("resume of %d chunks: %d lists %d gets, want 2 and %d", n, rec.count("LIST"), rec.count("GET"), n)
	}
	page, err := store.Read(ctx, sess, stream, CursorAt(n-2, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 1 || page.Cursor != CursorAt(n-1, 0) {
		t.Fatalf("read near the end: %+v", page)
	}
}

// Data names a distinct part type for ordering checks.
func Data(i int) parts.Type { return parts.Type(fmt.Sprintf("data-n%d", i)) }

func TestCoalescing(t *testing.T) {
	meta := json.RawMessage(`{"sig":"x"}`)
	tests := []struct {
		name  string
		parts []parts.Part
		want  []parts.Part
	}{
		{"text deltas of one block", []parts.Part{text("a", "1"), text("a", "2"), text("a", "3")}, []parts.Part{text("a", "123")}},
		{"reasoning deltas", []parts.Part{{Type: parts.ReasoningDelta, ID: "r", Delta: "th"}, {Type: parts.ReasoningDelta, ID: "r", Delta: "ink"}},
			[]parts.Part{{Type: parts.ReasoningDelta, ID: "r", Delta: "think"}}},
		{"different blocks", []parts.Part{text("a", "1"), text("b", "2")}, []parts.Part{text("a", "1"), text("b", "2")}},
		{"text then reasoning with one id", []parts.Part{text("a", "1"), {Type: parts.ReasoningDelta, ID: "a", Delta: "2"}},
			[]parts.Part{text("a", "1"), {Type: parts.ReasoningDelta, ID: "a", Delta: "2"}}},
		{"interrupted by another part", []parts.Part{text("a", "1"), {Type: parts.TextEnd, ID: "a"}, text("a", "2")},
			[]parts.Part{text("a", "1"), {Type: parts.TextEnd, ID: "a"}, text("a", "2")}},
		{"provider metadata differs", []parts.Part{{Type: parts.ReasoningDelta, ID: "r", Delta: "1"}, {Type: parts.ReasoningDelta, ID: "r", Delta: "2", ProviderMetadata: meta}},
			[]parts.Part{{Type: parts.ReasoningDelta, ID: "r", Delta: "1"}, {Type: parts.ReasoningDelta, ID: "r", Delta: "2", ProviderMetadata: meta}}},
		{"non-delta parts never merge", []parts.Part{{Type: parts.TextStart, ID: "a"}, {Type: parts.TextStart, ID: "a"}},
			[]parts.Part{{Type: parts.TextStart, ID: "a"}, {Type: parts.TextStart, ID: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := sharedStore().Open(session(), "c")
			for _, p := range tt.parts {
				mustAppend(t, k, p)
			}
			if got, want := asJSON(t, k.buf), asJSON(t, tt.want); got != want {
				t.Fatalf("buffer %s, want %s", got, want)
			}
		})
	}
}

func TestStaleWriterGetsChunkTaken(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess, stream := session(), "race"
	first := store.Open(sess, stream)
	mustAppend(t, first, parts.Part{Type: parts.Start, MessageID: "m"})
	mustFlush(t, first)

	a, _, err := store.Resume(ctx, sess, stream)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := store.Resume(ctx, sess, stream)
	if err != nil {
		t.Fatal(err)
	}
	if a.Next() != 1 || b.Next() != 1 {
		t.Fatalf("resumed at %d and %d, want 1", a.Next(), b.Next())
	}
	mustAppend(t, a, text("x", "from a"))
	mustFlush(t, a)
	before := rawChunk(t, sess, stream, 1)

	mustAppend(t, b, text("x", "from b"))
	err = b.Flush(ctx)
	if !errors.Is(err, ErrChunkTaken) {
		t.Fatalf("stale flush: %v, want ErrChunkTaken", err)
	}
	var taken *ChunkTakenError
	if !errors.As(err, &taken) || taken.Index != 1 || taken.Key != ChunkKey(sess, stream, 1) {
		t.Fatalf("stale flush: %#v, want *ChunkTakenError for chunk 1 at %s", taken, ChunkKey(sess, stream, 1))
	}
	if after := rawChunk(t, sess, stream, 1); !bytes.Equal(before, after) {
		t.Fatalf("chunk 1 changed:\n%s\n→\n%s", before, after)
	}
	if !strings.Contains(string(before), "from a") {
		t.Fatalf("chunk 1 is not a's: %s", before)
	}

	if err := b.Append(text("x", "more")); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("append after lost race: %v, want ErrPoisoned", err)
	}
	if err := b.Flush(ctx); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("flush after lost race: %v, want ErrPoisoned", err)
	}
	if err := b.Close(ctx, Aborted); !errors.Is(err, ErrPoisoned) || !errors.Is(err, ErrChunkTaken) {
		t.Fatalf("close after lost race: %v, want ErrPoisoned wrapping ErrChunkTaken", err)
	}
	if b.Next() != 1 || b.Puts() != 1 {
		t.Fatalf("poisoned sink: next %d puts %d, want 1 1", b.Next(), b.Puts())
	}
	if keys := chunkKeys(t, sess, stream); len(keys) != 2 {
		t.Fatalf("stream has %d chunks, want 2: %v", len(keys), keys)
	}

	// The winner carries on.
	mustAppend(t, a, parts.Part{Type: parts.Finish})
	if err := a.Close(ctx, Completed); err != nil {
		t.Fatal(err)
	}
	page, err := store.Read(ctx, sess, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 3 || page.Closed != Completed {
		t.Fatalf("read: %+v", page)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess, stream := session(), "closing"
	k := store.Open(sess, stream)
	mustAppend(t, k, parts.Part{Type: parts.Start, MessageID: "m"})
	mustFlush(t, k)
	mustAppend(t, k, text("a", "x"), parts.Part{Type: parts.Finish})
	if err := k.Close(ctx, Completed); err != nil {
		t.Fatal(err)
	}
	// The buffer and the marker went out as one chunk.
	if k.Puts() != 2 {
		t.Fatalf("puts %d, want 2", k.Puts())
	}
	if got, want := string(rawChunk(t, sess, stream, 1)),
		`{"parts":[{"type":"text-delta","id":"a","delta":"x"},{"type":"finish"}],"closed":"completed"}`; got != want {
		t.Fatalf("closing chunk %s, want %s", got, want)
	}
	if err := k.Close(ctx, Completed); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := k.Close(ctx, Failed); err != nil {
		t.Fatalf("close with another status: %v", err)
	}
	if k.Puts() != 2 || k.Closed() != Completed {
		t.Fatalf("after repeated closes: puts %d closed %q", k.Puts(), k.Closed())
	}
	if err := k.Append(text("a", "late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v, want ErrClosed", err)
	}
	if err := k.Flush(ctx); err != nil {
		t.Fatalf("flush of a closed sink with nothing buffered: %v", err)
	}

	r, ps, err := store.Resume(ctx, sess, stream)
	if err != nil {
		t.Fatal(err)
	}
	if r.Closed() != Completed || len(ps) != 3 || r.Next() != 2 {
		t.Fatalf("resume of closed stream: closed %q, %d parts, next %d", r.Closed(), len(ps), r.Next())
	}
	if err := r.Close(ctx, Cancelled); err != nil {
		t.Fatalf("close of resumed closed stream: %v", err)
	}
	if err := r.Append(parts.Part{Type: parts.Finish}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to resumed closed stream: %v, want ErrClosed", err)
	}
	if r.Puts() != 0 {
		t.Fatalf("resumed closed sink made %d puts", r.Puts())
	}
	if keys := chunkKeys(t, sess, stream); len(keys) != 2 {
		t.Fatalf("stream has %d chunks, want 2: %v", len(keys), keys)
	}
	page, err := store.Read(ctx, sess, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	if page.Closed != Completed || page.Cursor != "1.1" {
		t.Fatalf("read: closed %q cursor %q", page.Closed, page.Cursor)
	}
}

func TestCloseOfNeverWrittenSinkWritesNothing(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess := session()
	k := store.Open(sess, "empty")
	if err := k.Close(ctx, Aborted); err != nil {
		t.Fatal(err)
	}
	if k.Puts() != 0 || k.Closed() != Aborted || k.Next() != 0 {
		t.Fatalf("puts %d closed %q next %d", k.Puts(), k.Closed(), k.Next())
	}
	if err := k.Append(parts.Part{Type: parts.Start}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append: %v, want ErrClosed", err)
	}
	infos, err := store.Streams(ctx, sess)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 0 {
		t.Fatalf("streams %+v, want none", infos)
	}
	page, err := store.Read(ctx, sess, "empty", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 0 || page.Closed != Open || page.Cursor != "" || page.Entries == nil {
		t.Fatalf("read of a stream without chunks: %+v", page)
	}
	if b, _ := json.Marshal(page); string(b) != `{"entries":[],"cursor":""}` {
		t.Fatalf("empty page JSON %s", b)
	}
	// A resumed stream without chunks behaves like Open.
	r, ps, err := store.Resume(ctx, sess, "empty")
	if err != nil || len(ps) != 0 || r.Next() != 0 || r.Closed() != Open {
		t.Fatalf("resume of no chunks: %v %v %d %q", err, ps, r.Next(), r.Closed())
	}
}

func TestCloseWithEmptyBufferAfterFlushWritesMarkerChunk(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess, stream := session(), "marker"
	k := store.Open(sess, stream)
	mustAppend(t, k, parts.Part{Type: parts.Start})
	mustFlush(t, k)
	if err := k.Close(ctx, Failed); err != nil {
		t.Fatal(err)
	}
	if got := string(rawChunk(t, sess, stream, 1)); got != `{"parts":[],"closed":"failed"}` {
		t.Fatalf("marker chunk %s", got)
	}
	page, err := store.Read(ctx, sess, stream, "0.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 0 || page.Cursor != "0.0" || page.Closed != Failed {
		t.Fatalf("read after the last part: %+v", page)
	}
}

func TestNonConditionalErrorKeepsBuffer(t *testing.T) {
	ctx := t.Context()
	store := New(testEnv.Emu.Clients.S3, "no-such-bucket-"+strings.ToLower(session()))
	k := store.Open(session(), "x")
	mustAppend(t, k, parts.Part{Type: parts.Start}, text("a", "kept"))
	err := k.Flush(ctx)
	if err == nil {
		t.Fatal("flush to a missing bucket succeeded")
	}
	if errors.Is(err, ErrChunkTaken) || errors.Is(err, ErrPoisoned) {
		t.Fatalf("missing bucket reported as a lost race: %v", err)
	}
	var taken *ChunkTakenError
	if errors.As(err, &taken) {
		t.Fatalf("missing bucket gave %#v", taken)
	}
	if k.Next() != 0 || k.Buffered() != 2 {
		t.Fatalf("after failed flush: next %d buffered %d, want 0 2", k.Next(), k.Buffered())
	}
	// Not poisoned: more parts can be buffered and Close fails the same way.
	mustAppend(t, k, text("a", "!"))
	if err := k.Close(ctx, Completed); err == nil || errors.Is(err, ErrChunkTaken) {
		t.Fatalf("close to a missing bucket: %v", err)
	}
	if k.Closed() != Open {
		t.Fatalf("failed close marked the sink %q", k.Closed())
	}
}

func TestFlushRetryAfterLostResponse(t *testing.T) {
	ctx := t.Context()
	store, rec := recordedStore(1)
	sess, stream := session(), "flaky"
	k := store.Open(sess, stream)
	mustAppend(t, k, parts.Part{Type: parts.Start}, text("a", "one"))

	// The PUT reaches S3 but its answer is lost, and so is the look at
	// whether it landed.
	rec.setFail(func(op string) string {
		switch op {
		case "PUT":
			return "after"
		case "HEAD": // the read-back fails too: the outcome stays unknown
			return "before"
		}
		return ""
	})
	err := k.Flush(ctx)
	if err == nil || errors.Is(err, ErrChunkTaken) {
		t.Fatalf("flush with lost response: %v", err)
	}
	if k.Next() != 0 || k.Buffered() != 2 {
		t.Fatalf("after lost response: next %d buffered %d", k.Next(), k.Buffered())
	}
	rec.setFail(nil)
	// A delta appended meanwhile must not merge into the part that may
	// already be durable.
	mustAppend(t, k, text("a", "two"), parts.Part{Type: parts.TextEnd, ID: "a"})
	if k.Buffered() != 4 {
		t.Fatalf("buffered %d, want 4 (no coalescing into the tried chunk)", k.Buffered())
	}
	mustFlush(t, k)
	if k.Next() != 2 || k.Buffered() != 0 {
		t.Fatalf("after retry: next %d buffered %d, want 2 0", k.Next(), k.Buffered())
	}
	if rec.count("PUT") != 3 || rec.count("GET") != 1 {
		t.Fatalf("retry made %v, want 3 puts (lost, taken, next chunk) and 1 get", rec.counts)
	}
	_, ps, err := sharedStore().Resume(ctx, sess, stream)
	if err != nil {
		t.Fatal(err)
	}
	want := []parts.Part{{Type: parts.Start}, text("a", "one"), text("a", "two"), {Type: parts.TextEnd, ID: "a"}}
	if asJSON(t, ps) != asJSON(t, want) {
		t.Fatalf("stream %s, want %s", asJSON(t, ps), asJSON(t, want))
	}

	// A close whose answer is lost: retrying it finds it landed.
	mustAppend(t, k, parts.Part{Type: parts.Finish})
	rec.setFail(func(op string) string {
		switch op {
		case "PUT":
			return "after"
		case "HEAD": // the read-back fails too: the outcome stays unknown
			return "before"
		}
		return ""
	})
	if err := k.Close(ctx, Completed); err == nil {
		t.Fatal("close with lost response succeeded")
	}
	rec.setFail(nil)
	if err := k.Append(parts.Part{Type: parts.Finish}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append while a close may have landed: %v, want ErrClosed", err)
	}
	if err := k.Close(ctx, Completed); err != nil {
		t.Fatalf("close retry: %v", err)
	}
	if k.Closed() != Completed || k.Next() != 3 {
		t.Fatalf("after close retry: closed %q next %d", k.Closed(), k.Next())
	}
}

func TestSDKRetryOfLandedPutIsNotALostRace(t *testing.T) {
	store, rec := recordedStore(3)
	sess, stream := session(), "sdk-retry"
	k := store.Open(sess, stream)
	mustAppend(t, k, parts.Part{Type: parts.Start})
	lost := false
	rec.setFail(func(op string) string {
		if op == "PUT" && !lost {
			lost = true
			return "after"
		}
		return ""
	})
	// The SDK resends the PUT, which finds the chunk taken — by this sink.
	mustFlush(t, k)
	if rec.count("PUT") != 2 || k.Next() != 1 || k.Puts() != 1 {
		t.Fatalf("puts on the wire %d, sink puts %d, next %d; want 2 1 1", rec.count("PUT"), k.Puts(), k.Next())
	}
}

func TestRetryAfterUnsentWriteStillDetectsRace(t *testing.T) {
	ctx := t.Context()
	store, rec := recordedStore(1)
	sess, stream := session(), "unsent"
	a := store.Open(sess, stream)
	mustAppend(t, a, parts.Part{Type: parts.Start, MessageID: "a"})
	rec.setFail(func(op string) string {
		if op == "PUT" {
			return "before"
		}
		return ""
	})
	if err := a.Flush(ctx); err == nil || errors.Is(err, ErrChunkTaken) {
		t.Fatalf("unsent flush: %v", err)
	}
	rec.setFail(nil)
	// Another writer takes chunk 0 with the same parts.
	b := sharedStore().Open(sess, stream)
	mustAppend(t, b, parts.Part{Type: parts.Start, MessageID: "a"})
	mustFlush(t, b)
	err := a.Flush(ctx)
	if !errors.Is(err, ErrChunkTaken) {
		t.Fatalf("retry after another writer took the chunk: %v, want ErrChunkTaken", err)
	}
}

func TestInvalidArguments(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	for _, id := range []string{"", "a/b", "..", "tab\there"} {
		k := store.Open("s", id)
		if err := k.Append(parts.Part{Type: parts.Start}); !errors.Is(err, ErrInvalid) {
			t.Errorf("append to stream %q: %v, want ErrInvalid", id, err)
		}
		if err := k.Flush(ctx); !errors.Is(err, ErrInvalid) {
			t.Errorf("flush of stream %q: %v, want ErrInvalid", id, err)
		}
		if _, _, err := store.Resume(ctx, id, "x"); !errors.Is(err, ErrInvalid) {
			t.Errorf("resume of session %q: %v, want ErrInvalid", id, err)
		}
		if _, err := store.Read(ctx, "s", id, ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("read of stream %q: %v, want ErrInvalid", id, err)
		}
	}
	k := store.Open(session(), "x")
	if err := k.Append(parts.Part{Type: parts.Start}, parts.Part{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("append of an untyped part: %v, want ErrInvalid", err)
	}
	if k.Buffered() != 0 {
		t.Fatalf("a refused append buffered %d parts", k.Buffered())
	}
	if err := k.Close(ctx, Open); !errors.Is(err, ErrInvalid) {
		t.Fatalf("close with empty status: %v, want ErrInvalid", err)
	}
	if k.Closed() != Open {
		t.Fatal("refused close closed the sink")
	}
}

func BenchmarkFlush(b *testing.B) {
	store := sharedStore()
	k := store.Open(session(), "bench")
	deltas := 0
	for b.Loop() {
		id := "t"
		if err := k.Append(parts.Part{Type: parts.StartStep}, parts.Part{Type: parts.TextStart, ID: id}); err != nil {
			b.Fatal(err)
		}
		for range 50 {
			if err := k.Append(text(id, "token ")); err != nil {
				b.Fatal(err)
			}
			deltas++
		}
		if err := k.Append(parts.Part{Type: parts.TextEnd, ID: id}, parts.Part{Type: parts.FinishStep}); err != nil {
			b.Fatal(err)
		}
		if err := k.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(k.Puts())/float64(k.Next()), "puts/flush")
	b.ReportMetric(float64(deltas)/float64(k.Next()), "deltas/flush")
}
