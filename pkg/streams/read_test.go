package streams

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/parts"
)

func TestParseCursor(t *testing.T) {
	good := []string{"", "0.0", "3.12", "9999999999.0", "12.2147483647"}
	for _, s := range good {
		c, err := ParseCursor(s)
		if err != nil || string(c) != s {
			t.Errorf("ParseCursor(%q) = %q, %v", s, c, err)
		}
	}
	bad := []string{"x", "-1.2", "1", "1.", ".1", "1.2.3", "01.2", "1.02", "+1.2", " 1.2", "1.2 ", "1.x",
		"10000000000.0", "1.2147483648", "99999999999999999999.1"}
	for _, s := range bad {
		if c, err := ParseCursor(s); !errors.Is(err, ErrBadCursor) {
			t.Errorf("ParseCursor(%q) = %q, %v; want ErrBadCursor", s, c, err)
		}
	}
	if got := CursorAt(12, 3); got != "12.3" {
		t.Fatalf("CursorAt(12, 3) = %q", got)
	}
}

func TestReadRefusesCursorsNamingNoPart(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess, stream := session(), "r"
	k := store.Open(sess, stream)
	mustAppend(t, k, parts.Part{Type: parts.Start}, parts.Part{Type: parts.StartStep})
	mustFlush(t, k)
	mustAppend(t, k, parts.Part{Type: parts.FinishStep})
	mustFlush(t, k)
	for _, c := range []Cursor{"0.2", "1.1", "2.0", "7.0", "garbage"} {
		if _, err := store.Read(ctx, sess, stream, c); !errors.Is(err, ErrBadCursor) {
			t.Errorf("read after %q: %v, want ErrBadCursor", c, err)
		}
	}
	if _, err := store.Read(ctx, sess, "nothing", "0.0"); !errors.Is(err, ErrBadCursor) {
		t.Errorf("read of an empty stream after 0.0: %v, want ErrBadCursor", err)
	}
}

func TestReadOfMissingBucketFails(t *testing.T) {
	store := New(testEnv.Emu.Clients.S3, "no-such-bucket-"+strings.ToLower(session()))
	if _, err := store.Read(t.Context(), session(), "x", ""); err == nil {
		t.Fatal("read from a missing bucket succeeded")
	}
}

func TestStreamsListsCloseStatus(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess := session()

	done := store.Open(sess, "a-done")
	mustAppend(t, done, parts.Part{Type: parts.Start})
	mustFlush(t, done)
	mustAppend(t, done, parts.Part{Type: parts.Finish})
	if err := done.Close(ctx, Completed); err != nil {
		t.Fatal(err)
	}
	open := store.Open(sess, "b-open")
	for range 3 {
		mustAppend(t, open, parts.Part{Type: parts.StartStep})
		mustFlush(t, open)
	}
	failed := store.Open(sess, "c-failed")
	mustAppend(t, failed, parts.Part{Type: parts.Error, ErrorText: "boom"})
	if err := failed.Close(ctx, Failed); err != nil {
		t.Fatal(err)
	}
	// Never written: not a stream.
	if err := store.Open(sess, "d-never").Close(ctx, Aborted); err != nil {
		t.Fatal(err)
	}
	// Another session sharing a prefix of this one's id is not listed.
	other := store.Open(sess+"x", "z")
	mustAppend(t, other, parts.Part{Type: parts.Start})
	mustFlush(t, other)

	infos, err := store.Streams(ctx, sess)
	if err != nil {
		t.Fatal(err)
	}
	want := []Info{{ID: "a-done", Chunks: 2, Closed: Completed}, {ID: "b-open", Chunks: 3}, {ID: "c-failed", Chunks: 1, Closed: Failed}}
	if asJSON(t, infos) != asJSON(t, want) {
		t.Fatalf("streams %s, want %s", asJSON(t, infos), asJSON(t, want))
	}
	if infos, err := store.Streams(ctx, session()); err != nil || len(infos) != 0 {
		t.Fatalf("streams of an unknown session: %v %v", infos, err)
	}
}

func TestSnapshots(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess := session()
	k1, k2 := SnapshotKey(sess, 42), SnapshotKey(sess, 42)
	if k1 == k2 {
		t.Fatalf("two snapshot keys are equal: %s", k1)
	}
	prefix := "snapshots/" + sess + "/000000000042-"
	if !strings.HasPrefix(k1, prefix) || !strings.HasSuffix(k1, ".json") {
		t.Fatalf("snapshot key %s, want %s<hex>.json", k1, prefix)
	}

	type snap struct {
		Seq      int64    `json:"seq"`
		Messages []string `json:"messages"`
	}
	in := snap{Seq: 42, Messages: []string{"hi", "there"}}
	if err := store.PutSnapshot(ctx, k1, in); err != nil {
		t.Fatal(err)
	}
	var out snap
	if err := store.GetSnapshot(ctx, k1, &out); err != nil {
		t.Fatal(err)
	}
	if asJSON(t, out) != asJSON(t, in) {
		t.Fatalf("snapshot %+v, want %+v", out, in)
	}
	if err := store.PutSnapshot(ctx, k1, snap{Seq: 1}); !errors.Is(err, ErrExists) {
		t.Fatalf("overwrite: %v, want ErrExists", err)
	}
	if err := store.GetSnapshot(ctx, k1, &out); err != nil || out.Seq != 42 {
		t.Fatalf("after refused overwrite: %+v %v", out, err)
	}
	if err := store.GetSnapshot(ctx, k2, &out); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing snapshot: %v, want ErrNotFound", err)
	}
	if err := store.PutSnapshot(ctx, k2, func() {}); err == nil {
		t.Fatal("put of an unencodable value succeeded")
	}
}

// ReadChunks reads no more chunks than asked, with one listing and one
// GetObject per chunk read, says when it stopped short, and continues from
// its cursor to the same parts Read gives.
func TestReadChunksStopsAtItsLimit(t *testing.T) {
	ctx := t.Context()
	store, rec := recordedStore(1)
	sess, stream := session(), "limited"
	k := store.Open(sess, stream)
	for i := range 5 {
		mustAppend(t, k, text("b", strings.Repeat("x", i+1)))
		mustFlush(t, k)
	}
	if err := k.Close(ctx, Completed); err != nil {
		t.Fatal(err)
	}
	all, err := store.Read(ctx, sess, stream, "")
	if err != nil || len(all.Entries) != 5 || all.More || all.Closed != Completed {
		t.Fatalf("read: %+v, %v", all, err)
	}
	rec.reset()
	page, err := store.ReadChunks(ctx, sess, stream, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 2 || !page.More || page.Closed != Open || page.Cursor != "1.0" {
		t.Fatalf("first two chunks: %+v", page)
	}
	if rec.count("LIST") != 1 || rec.count(http.MethodGet) != 2 {
		t.Fatalf("reading two chunks took %d listings and %d gets, want 1 and 2", rec.count("LIST"), rec.count(http.MethodGet))
	}
	got := page.Entries
	for page.More {
		if page, err = store.ReadChunks(ctx, sess, stream, page.Cursor, 2); err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Entries...)
	}
	if page.Closed != Completed || len(got) != len(all.Entries) {
		t.Fatalf("continued reads gave %d parts closed %q, want %d closed %q", len(got), page.Closed, len(all.Entries), Completed)
	}
	for i := range got {
		if got[i].Cursor != all.Entries[i].Cursor || got[i].Part.Delta != all.Entries[i].Part.Delta {
			t.Fatalf("part %d: %+v, want %+v", i, got[i], all.Entries[i])
		}
	}
	if page, err = store.ReadChunks(ctx, sess, stream, "", 6); err != nil || page.More || len(page.Entries) != 5 {
		t.Fatalf("a limit over the stream's length: %+v, %v", page, err)
	}
}

func TestReadBack(t *testing.T) {
	ctx := t.Context()
	store, rec := recordedStore(1)
	sess, stream := session(), "tail"
	all := func(chunks int) (deltas []string, whole bool) {
		whole, err := store.ReadBack(ctx, sess, stream, chunks, func(p parts.Part) bool {
			deltas = append(deltas, p.Delta)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		return deltas, whole
	}
	if d, whole := all(2); len(d) != 0 || !whole {
		t.Fatalf("an empty stream: %v, whole %v", d, whole)
	}
	k := store.Open(sess, stream)
	for i := range 5 {
		mustAppend(t, k, text("b", strings.Repeat("x", i+1)))
		mustFlush(t, k)
	}
	// Five chunks of one part each, and the closing chunk, which has none.
	if err := k.Close(ctx, Completed); err != nil {
		t.Fatal(err)
	}
	fwd, err := store.Read(ctx, sess, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := len(fwd.Entries) - 1; i >= 0; i-- {
		want = append(want, fwd.Entries[i].Part.Delta)
	}
	if d, whole := all(10); !slices.Equal(d, want) || !whole {
		t.Fatalf("read back whole: %v (whole %v), want %v", d, whole, want)
	}
	if d, whole := all(3); !slices.Equal(d, want[:2]) || whole {
		t.Fatalf("the last three chunks: %v (whole %v), want %v", d, whole, want[:2])
	}
	// A reader that stops in the chunk before the last has read the last,
	// then the two before it at once.
	rec.reset()
	var seen []string
	if whole, err := store.ReadBack(ctx, sess, stream, 10, func(p parts.Part) bool {
		seen = append(seen, p.Delta)
		return false
	}); err != nil || whole || !slices.Equal(seen, want[:1]) {
		t.Fatalf("stopped at the first part: %v, %v, %v", seen, whole, err)
	}
	if rec.count("LIST") != 1 || rec.count(http.MethodGet) != 3 {
		t.Fatalf("stopping in the chunk before the last took %d listings and %d gets, want 1 and 3", rec.count("LIST"), rec.count(http.MethodGet))
	}
	if _, err := store.ReadBack(ctx, sess, stream, 0, func(parts.Part) bool { return true }); err == nil {
		t.Fatal("reading back 0 chunks: no error")
	}
}
