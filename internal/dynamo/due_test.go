package dynamo

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

// sessionIn is newSession with an id of the given due shard.
func sessionIn(t *testing.T, store *Store, shard int, created time.Time) *session {
	t.Helper()
	id := ids.New("s")
	for DueShardOf(id) != shard {
		id = ids.New("s")
	}
	s := &session{t: t, store: store, id: id, now: created}
	s.append(reducer.Fact{Type: reducer.SessionCreated, Agent: "helper", Owner: "o",
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "o"}})
	return s
}

// running makes n sessions of shard running, their leases due at
// start+15m+i*step (all at once when step is 0).
func running(t *testing.T, store *Store, shard, n int, start time.Time, step time.Duration) map[string]*session {
	t.Helper()
	out := map[string]*session{}
	for i := range n {
		s := sessionIn(t, store, shard, start.Add(-time.Hour))
		s.message("go")
		s.now = start.Add(time.Duration(i) * step)
		s.start()
		out[s.id] = s
	}
	return out
}

// The shard of a session is stable, within range, and spreads sessions.
func TestDueShardOf(t *testing.T) {
	used := map[int]int{}
	for range 1000 {
		id := ids.New("s")
		sh := DueShardOf(id)
		if sh < 0 || sh >= DueShards || DueShardOf(id) != sh {
			t.Fatalf("DueShardOf(%s) = %d", id, sh)
		}
		used[sh]++
	}
	for sh := range DueShards {
		if used[sh] < 1000/DueShards/3 {
			t.Errorf("shard %d holds %d of 1,000 sessions: %v", sh, used[sh], used)
		}
	}
}

// Due pages by due time, not by a cursor item's place, so heads the caller
// moves while it pages (done, or due later) skip none of the others.
func TestDueSkipsNothingWhileHeadsMove(t *testing.T) {
	store := ownTable(t)
	start := t0
	sessions := running(t, store, 3, 30, start, time.Second)
	before := start.Add(time.Hour)
	seen := map[string]int{}
	_, err := store.Due(t.Context(), 3, before, 4, func(h Head) error {
		seen[h.Session]++
		s := sessions[h.Session]
		if s == nil || seen[h.Session] > 1 && s.st.Status == reducer.Running {
			return fmt.Errorf("unexpected head %+v", h)
		}
		if seen[h.Session] > 1 {
			return nil // moved on already; it may come again
		}
		s.now = start.Add(50 * time.Minute) // after every lease
		if len(seen)%2 == 0 {
			s.complete("snap") // no longer due
		} else {
			s.append(reducer.Fact{Type: reducer.TurnSuspended, Turn: s.turn, Cause: reducer.CauseBudget}) // due later
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if missed := len(sessions) - len(seen); missed != 0 {
		t.Fatalf("Due skipped %d of %d sessions", missed, len(sessions))
	}
}

// Heads due at one millisecond, more than a page of them, are all listed.
func TestDueReadsTies(t *testing.T) {
	store := ownTable(t)
	tied := running(t, store, 5, 11, t0, 0)
	later := running(t, store, 5, 1, t0.Add(time.Minute), 0)
	seen := map[string]bool{}
	pages, err := store.Due(t.Context(), 5, t0.Add(time.Hour), 3, func(h Head) error {
		seen[h.Session] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(maps.Keys(tied))
	want = append(want, slices.Collect(maps.Keys(later))...)
	for _, id := range want {
		if !seen[id] {
			t.Errorf("Due missed %s (%d pages)", id, pages)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("Due listed %d sessions, want %d", len(seen), len(want))
	}
}

// A head written before the index was sharded ("due" for every session) is
// listed in shard 0, and its session's next write moves it to its own shard.
func TestDueReadsUnshardedHeads(t *testing.T) {
	store := ownTable(t)
	s := running(t, store, 7, 1, t0, 0)
	var old *session
	for _, v := range s {
		old = v
	}
	item := rawHead(t, store, old.id)
	if got := strAttr(item, attrDueShard); got != "due#7" {
		t.Fatalf("dueShard = %q, want due#7", got)
	}
	item[attrDueShard] = str("due")
	if _, err := store.client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(store.table), Item: item}); err != nil {
		t.Fatal(err)
	}
	if h, err := store.Head(t.Context(), old.id); err != nil || h.Why != reducer.ReasonLease {
		t.Fatalf("Head of an unsharded head: %+v, %v", h, err)
	}
	list := func(shard int) []string {
		var got []string
		if _, err := store.Due(t.Context(), shard, t0.Add(time.Hour), 0, func(h Head) error {
			got = append(got, h.Session)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got0, got7 := list(0), list(7); !slices.Equal(got0, []string{old.id}) || len(got7) != 0 {
		t.Fatalf("unsharded head: shard 0 lists %v, shard 7 %v", got0, got7)
	}
	old.append(reducer.Fact{Type: reducer.TurnSuspended, Turn: old.turn, Cause: reducer.CauseBudget})
	if got0, got7 := list(0), list(7); len(got0) != 0 || !slices.Equal(got7, []string{old.id}) {
		t.Fatalf("after a write: shard 0 lists %v, shard 7 %v", got0, got7)
	}

	// A head naming another session's shard is refused.
	item = rawHead(t, store, old.id)
	item[attrDueShard] = str("due#8")
	if _, err := store.client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(store.table), Item: item}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Head(t.Context(), old.id); err == nil {
		t.Fatal("Head accepted a head in another session's shard")
	}
}

func TestDueRefusesBadArguments(t *testing.T) {
	store := sharedStore()
	none := func(Head) error { return nil }
	for _, shard := range []int{-1, DueShards} {
		if _, err := store.Due(t.Context(), shard, t0, 0, none); err == nil {
			t.Errorf("Due of shard %d: no error", shard)
		}
	}
	if _, err := store.Due(t.Context(), 0, t0, -1, none); err == nil {
		t.Error("Due with a negative limit: no error")
	}
	stop := errors.New("stop")
	running(t, store, 2, 2, t0.Add(-48*time.Hour), time.Second)
	calls := 0
	if _, err := store.Due(t.Context(), 2, t0, 0, func(Head) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Due after fn's error: %v after %d calls", err, calls)
	}
}
