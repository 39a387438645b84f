package session_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestConverse: the first message creates the session in the same write,
// a message id already recorded is not appended again, a refusal by check
// writes nothing, and of racing first messages with one id exactly one is
// recorded.
func TestConverse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store()
	id := ids.New("chat")
	ok := func(reducer.State) error { return nil }
	st, dup, err := s.Converse(ctx, id, "alice", "demo", reducer.Message{ID: "m1", Text: "hi"}, ok)
	if err != nil || dup || st.LastSeq != 2 || st.Owner != "alice" || st.Agent != "demo" || len(st.Inbox) != 1 {
		t.Fatalf("first message: %+v dup=%v err=%v", st, dup, err)
	}
	facts, err := s.Facts(ctx, id, 0)
	if err != nil || len(facts) != 2 || facts[0].Type != reducer.SessionCreated || facts[1].Type != reducer.MessageReceived || facts[1].Message.ID != "m1" {
		t.Fatalf("facts = %+v, %v", facts, err)
	}
	if st, dup, err = s.Converse(ctx, id, "alice", "demo", reducer.Message{ID: "m1", Text: "hi"}, ok); err != nil || !dup || st.LastSeq != 2 {
		t.Fatalf("resent message: seq %d dup=%v err=%v", st.LastSeq, dup, err)
	}
	refused := errors.New("refused")
	if _, _, err = s.Converse(ctx, id, "bob", "demo", reducer.Message{ID: "m2", Text: "x"}, func(reducer.State) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("check's refusal: %v", err)
	}
	if facts, _ := s.Facts(ctx, id, 0); len(facts) != 2 {
		t.Fatalf("a refusal wrote: %d facts", len(facts))
	}

	race := ids.New("chat")
	var wg sync.WaitGroup
	var mu sync.Mutex
	recorded := 0
	for range 4 {
		wg.Go(func() {
			_, dup, err := s.Converse(ctx, race, "alice", "demo", reducer.Message{ID: "m1", Text: "hi"}, ok)
			if err != nil {
				t.Error(err)
				return
			}
			if !dup {
				mu.Lock()
				recorded++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if facts, _ := s.Facts(ctx, race, 0); recorded != 1 || len(facts) != 2 {
		t.Fatalf("racing first messages: %d recorded, %d facts", recorded, len(facts))
	}
}
