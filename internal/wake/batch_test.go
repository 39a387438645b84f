package wake

import (
	"context"
	"slices"
	"testing"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
)

// A batch of up to MaxBatch wakes is sent in one request and each arrives
// whole; a larger batch, or one with an invalid wake, is refused whole.
func TestWakeBatch(t *testing.T) {
	t.Parallel()
	url := newQueue(t)
	q := NewSQS(testenv.Emulator().Clients.SQS, url)
	var ws []Wake
	for i := range MaxBatch {
		ws = append(ws, Wake{Session: ids.New("s"), Reason: Rewake, Seq: int64(i + 1)})
	}
	if failed, err := q.WakeBatch(t.Context(), ws); err != nil || len(failed) != 0 {
		t.Fatalf("WakeBatch = %v, %v", failed, err)
	}
	var got []Wake
	for range 5 {
		for _, m := range receive(t, url, 1) {
			w, err := Parse(*m.Body)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, w)
		}
		if len(got) == len(ws) {
			break
		}
	}
	bySession := func(a, b Wake) int {
		if a.Session < b.Session {
			return -1
		}
		if a.Session > b.Session {
			return 1
		}
		return 0
	}
	slices.SortFunc(got, bySession)
	slices.SortFunc(ws, bySession)
	if !slices.Equal(got, ws) {
		t.Fatalf("received %v, want %v", got, ws)
	}

	more := append(slices.Clone(ws), Wake{Session: ids.New("s"), Reason: Rewake})
	if failed, err := q.WakeBatch(context.Background(), more); err == nil || len(failed) != len(more) {
		t.Fatalf("a batch of %d = %v, %v; want all refused", len(more), failed, err)
	}
	bad := []Wake{ws[0], {Reason: Rewake}}
	if failed, err := q.WakeBatch(context.Background(), bad); err == nil || len(failed) != len(bad) {
		t.Fatalf("a batch with a wake without a session = %v, %v; want all refused", failed, err)
	}
	if msgs := receive(t, url, 0); len(msgs) != 0 {
		t.Fatalf("refused batches sent %d messages", len(msgs))
	}
}
