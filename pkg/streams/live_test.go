package streams

import (
	"testing"
	"time"

	"github.com/baton-run/baton/internal/parts"
)

// TestLiveThrottlesWithLeadingAndTrailingEdges: the first Poke flushes at
// once; one within the interval writes nothing then, and its part is
// flushed by the trailing timer with no further call; Stop disarms a
// pending trailing flush and leaves its parts buffered for the owner.
func TestLiveThrottlesWithLeadingAndTrailingEdges(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	sess := session()

	// An interval no test outlives: only the leading edge can write.
	k := store.Open(sess, "slow")
	live := k.Live(time.Hour)
	k.Append(parts.Part{Type: parts.Start, MessageID: "m"})
	if err := live.Poke(ctx); err != nil || k.Puts() != 1 || k.Buffered() != 0 {
		t.Fatalf("leading edge: err %v, %d puts, %d buffered", err, k.Puts(), k.Buffered())
	}
	k.Append(parts.Part{Type: parts.TextDelta, ID: "b", Delta: "later"})
	if err := live.Poke(ctx); err != nil || k.Puts() != 1 || k.Buffered() != 1 {
		t.Fatalf("within the interval: err %v, %d puts, %d buffered", err, k.Puts(), k.Buffered())
	}
	if err := live.Stop(); err != nil || k.Puts() != 1 || k.Buffered() != 1 {
		t.Fatalf("stop: err %v, %d puts, %d buffered", err, k.Puts(), k.Buffered())
	}

	// A short interval: the trailing edge writes the second part while
	// nothing else happens.
	k = store.Open(sess, "fast")
	live = k.Live(10 * time.Millisecond)
	k.Append(parts.Part{Type: parts.Start, MessageID: "m"})
	if err := live.Poke(ctx); err != nil {
		t.Fatal(err)
	}
	k.Append(parts.Part{Type: parts.TextDelta, ID: "b", Delta: "paused"})
	if err := live.Poke(ctx); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Second); k.Buffered() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the trailing flush never came")
		}
	}
	if err := live.Stop(); err != nil {
		t.Fatal(err)
	}
	page, err := store.Read(ctx, sess, "fast", "")
	if err != nil || len(page.Entries) != 2 || page.Entries[1].Part.Delta != "paused" || k.Puts() != 2 {
		t.Fatalf("read back: %+v, %d puts, %v", page, k.Puts(), err)
	}
}
