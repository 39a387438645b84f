package streams

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/internal/dirbucket"
	"github.com/baton-run/baton/internal/memstore"
	"github.com/baton-run/baton/internal/parts"
)

// The stream-store contract: every store, on its kind of bucket, passes the
// same cases. The Express store runs against kumo through dirbucket, which
// gives the bucket the directory-bucket rules: listings come back shuffled
// and a listing with StartAfter is refused.

// contractStore is a store under test, its request recorder and, for
// Express, the transport applying the directory rules; raw reaches its
// bucket past the store.
type contractStore struct {
	store *Store
	rec   *recorder
	dir   *dirbucket.Transport
	raw   S3
}

// standardStore is the Standard store on the shared bucket.
func standardStore() contractStore {
	s, rec := recordedStore(0)
	return contractStore{store: s, rec: rec, raw: testEnv.Emu.Clients.S3}
}

// memoryStore is a store on a bucket in memory: of type t, where an
// Express store's bucket has the directory rules.
func memoryStore(t BucketType) contractStore {
	b := memstore.NewBucket(nil)
	b.Directory = t == Express
	return contractStore{store: NewOfType(b, "memory", t), raw: b}
}

// expressStore is the Express store on the shared bucket, seen through the
// directory-bucket rules.
func expressStore(tb testing.TB, newStore func(S3, string) *Store) contractStore {
	dir := dirbucket.New(nil, uint64(len(tb.Name())))
	rec := &recorder{base: dir.Client(), counts: map[string]int{}}
	client := s3.NewFromConfig(testEnv.Emu.Clients.Config, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(testEnv.Emu.URL)
		o.UsePathStyle = true
		o.HTTPClient = rec
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return contractStore{store: newStore(client, testEnv.Bucket), rec: rec, dir: dir, raw: testEnv.Emu.Clients.S3}
}

var contractCases = []struct {
	name string
	run  func(t *testing.T, c contractStore)
}{
	{"ReadAcrossChunks", contractReadAcrossChunks},
	{"ReadChunksPages", contractReadChunksPages},
	{"ReadBackNewestFirst", contractReadBack},
	{"ResumeContinues", contractResume},
	{"StaleWriterPoisoned", contractStaleWriter},
	{"StreamsOfSession", contractStreams},
	{"CursorsAndEmptyStreams", contractCursors},
	{"Snapshots", contractSnapshots},
	{"GapIsCorrupt", contractGap},
}

func TestContractStandard(t *testing.T) {
	for _, c := range contractCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, standardStore()) })
	}
}

// TestContractMemory runs the contract on internal/memstore's bucket, of
// both types, the store the engine's tests use.
func TestContractMemory(t *testing.T) {
	t.Parallel()
	for _, typ := range []BucketType{Standard, Express} {
		for _, c := range contractCases {
			t.Run(string(typ)+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, memoryStore(typ))
			})
		}
	}
}

func TestContractExpress(t *testing.T) {
	for _, c := range contractCases {
		t.Run(c.name, func(t *testing.T) {
			cs := expressStore(t, NewExpress)
			c.run(t, cs)
			if cs.dir.Refused() != 0 {
				t.Fatalf("the Express store sent %d listings a directory bucket refuses", cs.dir.Refused())
			}
		})
	}
}

// TestDirectoryRulesBite: the Standard store, put behind the directory
// rules, breaks (its cursor reads carry StartAfter, and it trusts listing
// order), so the Express contract run tests something.
func TestDirectoryRulesBite(t *testing.T) {
	c := expressStore(t, New)
	id := session()
	writeChunks(t, c.store, id, "r", 5, 2, Completed)
	if _, err := c.store.Read(t.Context(), id, "r", CursorAt(1, 0)); err == nil {
		t.Fatal("a read with StartAfter passed the directory rules")
	}
	if _, err := c.store.Read(t.Context(), id, "r", ""); err == nil {
		t.Fatal("a Standard store read a shuffled listing as if it were ordered")
	}
	if c.dir.Refused() == 0 || c.dir.Shuffled() == 0 {
		t.Fatalf("refused %d, shuffled %d listings", c.dir.Refused(), c.dir.Shuffled())
	}
}

// writeChunks writes a stream of chunks chunks of per parts each, closed
// with closed unless it is Open, and returns the parts in order.
func writeChunks(t *testing.T, s *Store, session, stream string, chunks, per int, closed Status) []parts.Part {
	t.Helper()
	k := s.Open(session, stream)
	var all []parts.Part
	for c := range chunks {
		for p := range per {
			part := text(fmt.Sprintf("b%d-%d", c, p), fmt.Sprintf("chunk %d part %d", c, p))
			mustAppend(t, k, part)
			all = append(all, part)
		}
		if c == chunks-1 && closed != Open {
			if err := k.Close(t.Context(), closed); err != nil {
				t.Fatalf("close: %v", err)
			}
			break
		}
		mustFlush(t, k)
	}
	return all
}

func entryParts(es []Entry) []parts.Part {
	ps := make([]parts.Part, len(es))
	for i, e := range es {
		ps[i] = e.Part
	}
	return ps
}

func samePart(a, b parts.Part) bool { return a.Type == b.Type && a.ID == b.ID && a.Delta == b.Delta }

func sameParts(t *testing.T, what string, got, want []parts.Part) {
	t.Helper()
	if !slices.EqualFunc(got, want, samePart) {
		t.Fatalf("%s: got %d parts %v, want %d %v", what, len(got), got, len(want), want)
	}
}

func contractReadAcrossChunks(t *testing.T, c contractStore) {
	id := session()
	want := writeChunks(t, c.store, id, "s", 20, 2, Completed)
	page, err := c.store.Read(t.Context(), id, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	sameParts(t, "read all", entryParts(page.Entries), want)
	if page.Closed != Completed || page.Cursor != CursorAt(19, 1) || page.More {
		t.Fatalf("page: closed %q cursor %q more %v", page.Closed, page.Cursor, page.More)
	}
	page, err = c.store.Read(t.Context(), id, "s", CursorAt(7, 1))
	if err != nil {
		t.Fatal(err)
	}
	sameParts(t, "read after 7.1", entryParts(page.Entries), want[16:])
	if page.Entries[0].Cursor != CursorAt(8, 0) {
		t.Fatalf("first cursor after 7.1 = %q", page.Entries[0].Cursor)
	}
	// Caught up: nothing new, the cursor stays.
	page, err = c.store.Read(t.Context(), id, "s", CursorAt(19, 1))
	if err != nil || len(page.Entries) != 0 || page.Cursor != CursorAt(19, 1) || page.Closed != Completed {
		t.Fatalf("caught up: %+v, %v", page, err)
	}
}

func contractReadChunksPages(t *testing.T, c contractStore) {
	id := session()
	want := writeChunks(t, c.store, id, "s", 10, 1, Open)
	var got []parts.Part
	cur := Cursor("")
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		page, err := c.store.ReadChunks(t.Context(), id, "s", cur, 4)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entryParts(page.Entries)...)
		cur = page.Cursor
		if !page.More {
			break
		}
	}
	sameParts(t, "paged read", got, want)
	if cur != CursorAt(9, 0) {
		t.Fatalf("last cursor %q", cur)
	}
}

func contractReadBack(t *testing.T, c contractStore) {
	id := session()
	want := writeChunks(t, c.store, id, "s", 9, 2, Interrupted)
	var got []parts.Part
	whole, err := c.store.ReadBack(t.Context(), id, "s", 100, func(p parts.Part) bool { got = append(got, p); return true })
	if err != nil || !whole {
		t.Fatalf("read back: whole %v, %v", whole, err)
	}
	slices.Reverse(got)
	sameParts(t, "read back", got, want)
	got = nil
	whole, err = c.store.ReadBack(t.Context(), id, "s", 3, func(p parts.Part) bool { got = append(got, p); return true })
	if err != nil || whole {
		t.Fatalf("read back 3 chunks: whole %v, %v", whole, err)
	}
	slices.Reverse(got)
	sameParts(t, "last 3 chunks", got, want[12:])
}

func contractResume(t *testing.T, c contractStore) {
	id := session()
	want := writeChunks(t, c.store, id, "s", 12, 1, Open)
	k, ps, err := c.store.Resume(t.Context(), id, "s")
	if err != nil {
		t.Fatal(err)
	}
	sameParts(t, "resumed parts", ps, want)
	if k.Next() != 12 || k.Closed() != Open {
		t.Fatalf("resumed at %d, closed %q", k.Next(), k.Closed())
	}
	more := text("late", "after resume")
	mustAppend(t, k, more)
	if err := k.Close(t.Context(), Completed); err != nil {
		t.Fatal(err)
	}
	page, err := c.store.Read(t.Context(), id, "s", CursorAt(11, 0))
	if err != nil || len(page.Entries) != 1 || !samePart(page.Entries[0].Part, more) || page.Closed != Completed {
		t.Fatalf("read after resume: %+v, %v", page, err)
	}
	k, _, err = c.store.Resume(t.Context(), id, "s")
	if err != nil || k.Closed() != Completed || k.Next() != 13 {
		t.Fatalf("resume closed stream: %v", err)
	}
	if err := k.Append(more); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to a resumed closed stream: %v", err)
	}
}

func contractStaleWriter(t *testing.T, c contractStore) {
	id := session()
	a, b := c.store.Open(id, "s"), c.store.Open(id, "s")
	mustAppend(t, a, text("a", "first writer"))
	mustFlush(t, a)
	mustAppend(t, b, text("b", "stale writer"))
	if err := b.Flush(t.Context()); !errors.Is(err, ErrChunkTaken) || !IsStale(err) {
		t.Fatalf("stale flush: %v", err)
	}
	if err := b.Append(text("b", "again")); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("append after a lost race: %v", err)
	}
	// A resumed writer that falls behind is poisoned too.
	r, _, err := c.store.Resume(t.Context(), id, "s")
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, a, text("a2", "second chunk"))
	mustFlush(t, a)
	mustAppend(t, r, text("r", "behind"))
	if err := r.Flush(t.Context()); !errors.Is(err, ErrChunkTaken) {
		t.Fatalf("stale resumed flush: %v", err)
	}
	page, err := c.store.Read(t.Context(), id, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	sameParts(t, "the first writer's parts only", entryParts(page.Entries),
		[]parts.Part{text("a", "first writer"), text("a2", "second chunk")})
}

func contractStreams(t *testing.T, c contractStore) {
	id := session()
	writeChunks(t, c.store, id, "b", 3, 1, Completed)
	writeChunks(t, c.store, id, "a", 5, 1, Open)
	writeChunks(t, c.store, id, "c", 1, 1, Failed)
	infos, err := c.store.Streams(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := []Info{{ID: "a", Chunks: 5, Closed: Open}, {ID: "b", Chunks: 3, Closed: Completed}, {ID: "c", Chunks: 1, Closed: Failed}}
	if !slices.Equal(infos, want) {
		t.Fatalf("streams = %+v, want %+v", infos, want)
	}
}

func contractCursors(t *testing.T, c contractStore) {
	id := session()
	page, err := c.store.Read(t.Context(), id, "none", "")
	if err != nil || len(page.Entries) != 0 || page.Closed != Open {
		t.Fatalf("empty stream: %+v, %v", page, err)
	}
	writeChunks(t, c.store, id, "s", 2, 2, Open)
	for _, cur := range []Cursor{CursorAt(5, 0), CursorAt(1, 2)} {
		if _, err := c.store.Read(t.Context(), id, "s", cur); !errors.Is(err, ErrBadCursor) {
			t.Fatalf("cursor %q: %v", cur, err)
		}
	}
	if _, err := c.store.Read(t.Context(), id, "a/b", ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad stream id: %v", err)
	}
}

func contractSnapshots(t *testing.T, c contractStore) {
	key := SnapshotKey(session(), 7)
	if err := c.store.PutSnapshot(t.Context(), key, map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.store.PutSnapshot(t.Context(), key, map[string]int{"n": 2}); !errors.Is(err, ErrExists) {
		t.Fatalf("overwrite: %v", err)
	}
	var got map[string]int
	if err := c.store.GetSnapshot(t.Context(), key, &got); err != nil || got["n"] != 1 {
		t.Fatalf("get: %v, %v", got, err)
	}
	if err := c.store.GetSnapshot(t.Context(), SnapshotKey(session(), 1), &got); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
}

// TestExpressReadsWithoutListing: on a directory bucket, Read and Resume
// find chunks by index, with no ListObjectsV2: a closed stream of n chunks
// costs n GetObjects and at most getConcurrency-1 more for missing ones,
// and a live reader's poll that finds nothing new costs two (the cursor's
// chunk, and the next one, not yet written).
func TestExpressReadsWithoutListing(t *testing.T) {
	c := expressStore(t, NewExpress)
	id := session()
	writeChunks(t, c.store, id, "closed", 20, 1, Completed)
	writeChunks(t, c.store, id, "live", 3, 1, Open)
	c.rec.reset()
	if _, err := c.store.Read(t.Context(), id, "closed", ""); err != nil {
		t.Fatal(err)
	}
	if g, l := c.rec.count(http.MethodGet), c.rec.count("LIST"); g < 20 || g >= 20+getConcurrency || l != 0 {
		t.Fatalf("read of 20 closed chunks: %d GETs, %d LISTs; want 20 to %d, 0", g, l, 20+getConcurrency-1)
	}
	c.rec.reset()
	if page, err := c.store.Read(t.Context(), id, "live", CursorAt(2, 0)); err != nil || len(page.Entries) != 0 {
		t.Fatalf("poll: %+v, %v", page, err)
	}
	if g, l := c.rec.count(http.MethodGet), c.rec.count("LIST"); g != 2 || l != 0 {
		t.Fatalf("empty poll: %d GETs, %d LISTs; want 2, 0", g, l)
	}
	c.rec.reset()
	if _, _, err := c.store.Resume(t.Context(), id, "live"); err != nil {
		t.Fatal(err)
	}
	if g, l := c.rec.count(http.MethodGet), c.rec.count("LIST"); g != 4 || l != 0 {
		t.Fatalf("resume of 3 open chunks: %d GETs, %d LISTs; want 4, 0", g, l)
	}
}

// contractGap: a chunk missing before a stored one (which the sink never
// leaves) is reported as corruption, not read past or as the end.
func contractGap(t *testing.T, c contractStore) {
	id := session()
	writeChunks(t, c.store, id, "s", 10, 1, Completed)
	if _, err := c.raw.DeleteObject(t.Context(), &s3.DeleteObjectInput{
		Bucket: aws.String(c.store.Bucket()), Key: aws.String(ChunkKey(id, "s", 5)),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.store.Read(t.Context(), id, "s", ""); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read over a gap: %v", err)
	}
	if _, _, err := c.store.Resume(t.Context(), id, "s"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("resume over a gap: %v", err)
	}
	if _, err := c.store.ReadBack(t.Context(), id, "s", 100, func(parts.Part) bool { return true }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read back over a gap: %v", err)
	}
}

// behindWriter answers the first GetObject of one key with NoSuchKey, as S3
// does when the GET is served just before a live writer's PUT of that key
// lands, while the writer's next chunk, written after it, is already there
// for a GET of the same window served a moment later.
type behindWriter struct {
	base aws.HTTPClient
	key  string

	mu   sync.Mutex
	done bool
}

func (b *behindWriter) Do(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	hit := !b.done && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/"+b.key)
	if hit {
		b.done = true
	}
	b.mu.Unlock()
	if !hit {
		return b.base.Do(req)
	}
	body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`
	return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}, nil
}

// TestExpressReadRacingAWriter: a window of concurrent GETs that finds
// chunk n missing and n+1 present raced the writer; the reader reads chunk
// n again and gets the whole stream, instead of calling it corrupt.
func TestExpressReadRacingAWriter(t *testing.T) {
	id := session()
	writeChunks(t, sharedStore(), id, "s", 10, 1, Completed)
	c := expressStore(t, NewExpress)
	race := &behindWriter{base: c.rec, key: ChunkKey(id, "s", 5)}
	client := s3.NewFromConfig(testEnv.Emu.Clients.Config, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(testEnv.Emu.URL)
		o.UsePathStyle = true
		o.HTTPClient = race
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	page, err := NewExpress(client, testEnv.Bucket).Read(t.Context(), id, "s", "")
	if err != nil || len(page.Entries) != 10 || page.Closed != Completed {
		t.Fatalf("read racing a writer: %d entries, closed %q, %v", len(page.Entries), page.Closed, err)
	}
	if !race.done {
		t.Fatal("the race was not staged")
	}
}
