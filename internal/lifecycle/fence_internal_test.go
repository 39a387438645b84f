package lifecycle

import (
	"slices"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// TestFence: of a buried session's turns, only one ended by someone other
// than its runner while its invocation's lease still holds keeps a fence,
// on its stream, until that lease.
func TestFence(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	op := reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}
	facts := []reducer.Fact{
		{Type: reducer.TurnStarted, Turn: "t1", Stream: "s1", Lease: now.Add(time.Minute)},
		{Type: reducer.TurnCompleted, Turn: "t1", Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: "t1"}},
		{Type: reducer.TurnStarted, Turn: "t2", Stream: "s2", Lease: now.Add(-time.Minute)},
		{Type: reducer.TurnCancelled, Turn: "t2", Actor: op},
		{Type: reducer.TurnStarted, Turn: "t3", Stream: "s3", Lease: now.Add(2 * time.Minute)},
		{Type: reducer.TurnCancelled, Turn: "t3", Actor: op},
	}
	until, fenced := fence(facts, now)
	if !until.Equal(now.Add(2*time.Minute)) || !slices.Equal(fenced, []string{"s3"}) {
		t.Fatalf("fence %v %v, want s3 until %v", until, fenced, now.Add(2*time.Minute))
	}
	if until, fenced := fence(facts[:4], now); !until.IsZero() || fenced != nil {
		t.Fatalf("no fence wanted: %v %v", until, fenced)
	}
}

// TestLastChunks: the fence of a stream is its last chunk; other streams
// and snapshots keep none.
func TestLastChunks(t *testing.T) {
	objs := []streams.Object{
		{Key: "streams/s/a/0002", Stream: "a"}, {Key: "streams/s/a/0001", Stream: "a"},
		{Key: "streams/s/b/0001", Stream: "b"}, {Key: "snapshots/s/1.json"},
	}
	got := lastChunks(objs, []string{"a"})
	if len(got) != 1 || !got["streams/s/a/0002"] {
		t.Fatalf("fences %v, want streams/s/a/0002", got)
	}
	if got := lastChunks(objs, nil); got != nil {
		t.Fatalf("fences %v without fenced streams", got)
	}
}
