package tick_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/wake"
)

// batcher is a wake.Batcher on the test's queue that records the size of
// each batch and refuses the wakes of the sessions in refuse.
type batcher struct {
	wake.Waker
	refuse map[string]bool

	mu      sync.Mutex
	batches []int
}

func (b *batcher) WakeBatch(ctx context.Context, ws []wake.Wake) ([]wake.Wake, error) {
	b.mu.Lock()
	b.batches = append(b.batches, len(ws))
	b.mu.Unlock()
	var failed []wake.Wake
	for _, w := range ws {
		if b.refuse[w.Session] {
			failed = append(failed, w)
			continue
		}
		if err := b.Waker.Wake(ctx, w, 0); err != nil {
			return ws, err
		}
	}
	if len(failed) > 0 {
		return failed, errors.New("refused")
	}
	return nil, nil
}

// With a waker that sends batches, the run sends its wakes in batches of at
// most wake.MaxBatch, each sent wake once; a wake the batch refused counts
// as an error, not as re-sent, and a grace later it is re-sent.
func TestWakesGoInBatches(t *testing.T) {
	t.Parallel()
	const n, grace = 45, time.Minute
	s := newStack(t)
	inv := s.fresh(nil)
	ids := map[string]bool{}
	var refused string
	for range n {
		id := newSession(t, inv, "Anyone?")
		ids[id] = true
		refused = id
	}
	b := &batcher{Waker: s.mem.Wakes, refuse: map[string]bool{refused: true}}
	r := newRewakeRuns(t, s, grace, time.Now().Add(grace+time.Second))
	r.tk.Waker = b
	rep, err := r.tk.Run(ctxT(t))
	if err != nil || rep.Seen != n || rep.Rewoken != n-1 || rep.Errors != 1 {
		t.Fatalf("run = %+v, %v; want %d re-sent and one refused", rep, err, n-1)
	}
	got := s.receive(t)
	sent := map[string]bool{}
	for _, w := range got {
		if !ids[w.Session] || sent[w.Session] || w.Session == refused {
			t.Fatalf("wake %+v: not one of the sessions, sent twice, or refused", w)
		}
		sent[w.Session] = true
	}
	if len(sent) != n-1 {
		t.Fatalf("%d wakes sent, want %d", len(sent), n-1)
	}
	total := 0
	for _, k := range b.batches {
		if k < 1 || k > wake.MaxBatch {
			t.Fatalf("batches %v: one outside 1..%d", b.batches, wake.MaxBatch)
		}
		total += k
	}
	if total != n || len(b.batches) < (n+wake.MaxBatch-1)/wake.MaxBatch {
		t.Fatalf("batches %v hold %d wakes, want %d", b.batches, total, n)
	}

	// A grace later the refused wake is re-sent, with the others.
	b.refuse = nil
	r.clk.Advance(grace)
	if rep, err := r.tk.Run(ctxT(t)); err != nil || rep.Rewoken != n || rep.Errors != 0 {
		t.Fatalf("a grace later = %+v, %v; want all %d re-sent", rep, err, n)
	}
}
