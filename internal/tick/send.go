package tick

import (
	"context"
	"sync"
	"time"

	"github.com/baton-run/baton/internal/wake"
)

// Defaults of the run's wake sender.
const (
	// DefaultSenders is the number of batches of wakes in flight at once.
	DefaultSenders = 8
	// batchLinger is how long a sender waits for a batch to fill before
	// it sends what it has.
	batchLinger = 5 * time.Millisecond
)

// sender sends one run's wakes. With a waker that batches (wake.Batcher,
// as wake.SQS does) visits hand their wakes over and go on to the next
// session, and Senders goroutines send them wake.MaxBatch a request; with
// any other waker each visit sends its own. A wake that fails is counted
// in the run's Errors and logged: what it was for is durable, and a run a
// grace later re-sends it.
type sender struct {
	t     *Tick
	c     *counts
	batch wake.Batcher // nil: send one at a time
	in    chan queued
	wg    sync.WaitGroup
}

// queued is a wake handed to the sender, and what to count once it is sent.
type queued struct {
	w    wake.Wake
	sent func()
}

// newSender starts the run's sender; ctx bounds its sends.
func (t *Tick) newSender(ctx context.Context, c *counts) *sender {
	s := &sender{t: t, c: c}
	b, ok := t.waker().(wake.Batcher)
	if !ok {
		return s
	}
	s.batch, s.in = b, make(chan queued, orDefault(t.Concurrency, DefaultConcurrency))
	for range orDefault(t.Senders, DefaultSenders) {
		s.wg.Go(func() { s.loop(ctx) })
	}
	return s
}

// send sends w, now or in a batch, and calls sent (if not nil) once it is
// sent. It returns an error only when it sent w itself and that failed.
func (s *sender) send(ctx context.Context, w wake.Wake, sent func()) error {
	if s.batch == nil {
		if err := s.t.waker().Wake(ctx, w, 0); err != nil {
			return err
		}
		if sent != nil {
			sent()
		}
		return nil
	}
	s.in <- queued{w: w, sent: sent}
	return nil
}

// close sends what is queued and waits for it.
func (s *sender) close() {
	if s.in != nil {
		close(s.in)
		s.wg.Wait()
	}
}

// loop sends batches of what visits queue: each as full as the visits
// fill it within batchLinger.
func (s *sender) loop(ctx context.Context) {
	timer := time.NewTimer(batchLinger)
	defer timer.Stop()
	for first := range s.in {
		batch := []queued{first}
		timer.Reset(batchLinger)
	fill:
		for len(batch) < wake.MaxBatch {
			select {
			case q, ok := <-s.in:
				if !ok {
					break fill
				}
				batch = append(batch, q)
			case <-timer.C:
				break fill
			}
		}
		s.flush(ctx, batch)
	}
}

// flush sends one batch and counts what it sent and what failed.
func (s *sender) flush(ctx context.Context, batch []queued) {
	ws := make([]wake.Wake, len(batch))
	for i, q := range batch {
		ws[i] = q.w
	}
	failed, err := s.batch.WakeBatch(ctx, ws)
	lost := map[string]bool{}
	for _, w := range failed {
		lost[w.Session] = true
	}
	for _, q := range batch {
		if !lost[q.w.Session] && q.sent != nil {
			q.sent()
		}
	}
	if err != nil {
		s.c.add(func(r *Report) { r.Errors += len(failed) })
		s.t.log().WarnContext(ctx, "tick: wakes not sent; a run a grace from now re-sends them", "wakes", len(failed), "batch", len(batch), "err", err)
	}
}
