package dynamo

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

func TestTailReadsBackToNewestSnapshot(t *testing.T) {
	store := sharedStore()

	t.Run("after snapshots", func(t *testing.T) {
		s := newSession(t, store, ids.New("owner"), t0)
		s.turns(3) // facts 2..10; snapshots at 4, 7, 10
		s.message("and now?")
		s.start() // 11, 12
		got, err := store.Tail(t.Context(), s.id)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := seqs(got), seqRange(10, 12); !slices.Equal(g, w) {
			t.Fatalf("Tail = %v, want %v", g, w)
		}
		if got[0].Snapshot != fmt.Sprintf("snap/%s/10", s.id) {
			t.Errorf("first tail fact has snapshot %q", got[0].Snapshot)
		}
		if g, w := mustJSON(t, got), mustJSON(t, s.facts[9:]); g != w {
			t.Errorf("tail facts differ:\n got %s\nwant %s", g, w)
		}
	})
	t.Run("snapshot is the last fact", func(t *testing.T) {
		s := newSession(t, store, ids.New("owner"), t0)
		s.turns(2)
		got, err := store.Tail(t.Context(), s.id)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := seqs(got), []int64{7}; !slices.Equal(g, w) {
			t.Fatalf("Tail = %v, want %v", g, w)
		}
	})
	t.Run("no snapshot reads to seq 1", func(t *testing.T) {
		s := newSession(t, store, ids.New("owner"), t0)
		s.message("hi")
		s.start()
		s.complete("") // a turn that ended without a snapshot
		got, err := store.Tail(t.Context(), s.id)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := seqs(got), seqRange(1, 4); !slices.Equal(g, w) {
			t.Fatalf("Tail = %v, want %v", g, w)
		}
	})
	t.Run("several pages since the snapshot", func(t *testing.T) {
		s := newSession(t, store, ids.New("owner"), t0)
		s.turns(1) // snapshot at 4
		for i := range 30 {
			s.message(fmt.Sprintf("queued %d", i)) // 5..34
		}
		before := store.Requests()
		got, err := store.Tail(t.Context(), s.id)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := seqs(got), seqRange(4, 34); !slices.Equal(g, w) {
			t.Fatalf("Tail = %v, want %v", g, w)
		}
		// 31 facts at 25 a page: two requests.
		if n := store.Requests() - before; n != 2 {
			t.Errorf("Tail over 31 facts made %d requests, want 2", n)
		}
	})
	t.Run("unknown session", func(t *testing.T) {
		got, err := store.Tail(t.Context(), ids.New("s"))
		if err != nil || len(got) != 0 {
			t.Fatalf("Tail of an unknown session = %v, %v; want none", seqs(got), err)
		}
	})
}

func TestTailRequestsDoNotGrowWithHistory(t *testing.T) {
	store := sharedStore()
	counts := map[int]int64{}
	for _, prior := range []int{1, 10, 50} {
		s := newSession(t, store, ids.New("owner"), t0)
		s.turns(prior)
		s.message("next question")
		s.start()

		before := store.Requests()
		got, err := store.Tail(t.Context(), s.id)
		if err != nil {
			t.Fatal(err)
		}
		counts[prior] = store.Requests() - before
		last := s.st.LastSeq
		if g, w := seqs(got), seqRange(last-2, last); !slices.Equal(g, w) {
			t.Fatalf("%d prior turns: Tail = %v, want %v", prior, g, w)
		}

		// Reading the whole log, by contrast, grows with history.
		if prior == 50 {
			before = store.Requests()
			all, err := store.Facts(t.Context(), s.id, 0)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(all)) != last || store.Requests() == before {
				t.Fatalf("Facts read %d facts in %d requests", len(all), store.Requests()-before)
			}
		}
	}
	t.Logf("Tail requests by prior snapshot-carrying turns: %v", counts)
	if counts[1] != 1 || counts[10] != 1 || counts[50] != 1 {
		t.Fatalf("Tail requests by prior turns = %v, want 1 each", counts)
	}
}

// A session whose newest snapshot sits further back than one page still
// stops right there.
func TestTailSnapshotOnALaterPage(t *testing.T) {
	store := sharedStore()
	s := newSession(t, store, ids.New("owner"), t0)
	s.turns(5) // snapshot at 16
	// A long-running turn: many approval round trips after the snapshot.
	s.message("deploy everything")
	s.start()
	for i := range 12 {
		ap := fmt.Sprintf("ap%d", i)
		s.append(
			reducer.Fact{Type: reducer.ApprovalRequested, Turn: s.turn, Approval: &reducer.Approval{
				ID: ap, ToolCallID: "call" + ap, Tool: "deploy", Input: []byte(`{}`), Expires: s.now.Add(time.Hour)}},
			reducer.Fact{Type: reducer.TurnSuspended, Turn: s.turn, Cause: reducer.CauseApproval},
		)
		s.append(reducer.Fact{Type: reducer.ApprovalAnswered, Turn: s.turn,
			Actor:  reducer.Actor{Kind: reducer.ActorOperator, ID: "op"},
			Answer: &reducer.Answer{ApprovalID: ap, ToolCallID: "call" + ap, Decision: reducer.Approve}})
		s.append(reducer.Fact{Type: reducer.TurnResumed, Turn: s.turn, Lease: s.now.Add(15 * time.Minute)})
	}
	last := s.st.LastSeq // 18 + 48 = 66
	before := store.Requests()
	got, err := store.Tail(t.Context(), s.id)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := seqs(got), seqRange(16, last); !slices.Equal(g, w) {
		t.Fatalf("Tail = %v, want %v", g, w)
	}
	if n, want := store.Requests()-before, (last-16)/tailPage+1; n != want {
		t.Errorf("Tail over %d facts made %d requests, want %d", last-15, n, want)
	}
}
