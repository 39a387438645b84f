package streams

import (
	"testing"
)

// TestSessionObjects: a session's objects are its streams' chunks, each
// with its stream, then its snapshots; another session's are not among
// them, and a deleted one is gone.
func TestSessionObjects(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess, other := session(), session()
	for _, st := range []string{"a", "b"} {
		k := store.Open(sess, st)
		mustAppend(t, k, text("1", "hi"))
		mustFlush(t, k)
	}
	snap := SnapshotKey(sess, 1)
	if err := store.PutSnapshot(ctx, snap, map[string]int{"seq": 1}); err != nil {
		t.Fatal(err)
	}
	k := store.Open(other, "a")
	mustAppend(t, k, text("1", "hi"))
	mustFlush(t, k)

	objs, err := store.SessionObjects(ctx, sess)
	if err != nil {
		t.Fatal(err)
	}
	want := []Object{{Key: ChunkKey(sess, "a", 0), Stream: "a"}, {Key: ChunkKey(sess, "b", 0), Stream: "b"}, {Key: snap}}
	if len(objs) != len(want) {
		t.Fatalf("objects %+v, want %+v", objs, want)
	}
	for i := range want {
		if objs[i] != want[i] {
			t.Fatalf("objects %+v, want %+v", objs, want)
		}
	}
	if err := store.DeleteObject(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if objs, err = store.SessionObjects(ctx, sess); err != nil || len(objs) != 2 {
		t.Fatalf("after deleting the snapshot: %+v, %v", objs, err)
	}
	if _, err := store.SessionObjects(ctx, ""); err == nil {
		t.Fatal("the objects of no session listed")
	}
}
