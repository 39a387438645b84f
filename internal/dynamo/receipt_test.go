package dynamo

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestReceiptIsWrittenWithItsAppendOnly writes a receipt with an append,
// then tries the key again with another append: the second fails with
// ErrReceiptTaken and writes neither its fact nor its receipt.
func TestReceiptIsWrittenWithItsAppendOnly(t *testing.T) {
	store := sharedStore()
	s := newSession(t, store, ids.New("owner"), t0)
	rc := &Receipt{Key: ids.New("key"), Request: "req-1", Answer: []byte(`{"status":202}`), Expires: time.Now().Add(time.Hour)}
	if _, ok, err := store.Receipt(t.Context(), rc.Key); ok || err != nil {
		t.Fatalf("receipt before any write: %v, %v", ok, err)
	}
	msg := func(text string) reducer.Fact {
		return reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "op"},
			Message: &reducer.Message{ID: ids.New("m"), Text: text}}
	}
	next, batch := s.prepare(msg("first"))
	if err := store.AppendWithReceipt(t.Context(), s.id, next, rc, batch...); err != nil {
		t.Fatal(err)
	}
	s.st = next
	got, ok, err := store.Receipt(t.Context(), rc.Key)
	if err != nil || !ok || got.Request != rc.Request || string(got.Answer) != string(rc.Answer) || got.Expires.Unix() != rc.Expires.Unix() {
		t.Fatalf("receipt = %+v, %v, %v", got, ok, err)
	}

	again := *rc
	again.Request, again.Answer = "req-2", []byte(`{"status":201}`)
	next, batch = s.prepare(msg("second"))
	if err := store.AppendWithReceipt(t.Context(), s.id, next, &again, batch...); !errors.Is(err, ErrReceiptTaken) || errors.Is(err, ErrConflict) {
		t.Fatalf("append under a taken key = %v; want ErrReceiptTaken only", err)
	}
	facts, err := store.Facts(t.Context(), s.id, 0)
	if err != nil || len(facts) != 2 {
		t.Fatalf("facts = %d, %v; want 2", len(facts), err)
	}
	if got, _, _ := store.Receipt(t.Context(), rc.Key); got.Request != rc.Request {
		t.Fatalf("the receipt was overwritten: %+v", got)
	}

	// A receipt is invisible to the session's facts and head, and an
	// expired one can be taken again.
	if h, err := store.Head(t.Context(), s.id); err != nil || h.LastSeq != 2 {
		t.Fatalf("head = %+v, %v", h, err)
	}
	old := &Receipt{Key: ids.New("key"), Request: "r", Answer: []byte(`{}`), Expires: time.Now().Add(-time.Second)}
	next, batch = s.prepare(msg("third"))
	if err := store.AppendWithReceipt(t.Context(), s.id, next, old, batch...); err != nil {
		t.Fatal(err)
	}
	s.st = next
	if _, ok, err := store.Receipt(t.Context(), old.Key); ok || err != nil {
		t.Fatalf("an expired receipt was found: %v, %v", ok, err)
	}
	old.Expires = time.Now().Add(time.Hour)
	next, batch = s.prepare(msg("fourth"))
	if err := store.AppendWithReceipt(t.Context(), s.id, next, old, batch...); err != nil {
		t.Fatalf("taking an expired key again: %v", err)
	}
}
