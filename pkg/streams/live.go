package streams

import (
	"context"
	"sync"
	"time"
)

// Live flushes a sink while parts arrive, at most once per interval, with
// a leading and a trailing edge: the first Poke after a quiet interval
// flushes at once, and parts poked within the interval are flushed by a
// timer when it ends, whether or not more parts come. So every part
// appended and poked is durable within the interval of its Poke, even when
// the producer pauses, and the sink writes at most one chunk per interval
// (plus whatever its owner flushes itself).
//
// A Live is used by one producer goroutine (Poke, Stop); the timer's flush
// runs on its own, which the Sink's lock makes safe.
type Live struct {
	sink  *Sink
	every time.Duration

	mu      sync.Mutex
	ctx     context.Context // the latest Poke's, for the timer's flush
	last    time.Time       // when the latest flush began
	timer   *time.Timer     // the armed trailing flush, if any
	err     error           // a trailing flush's failure, not yet reported
	stopped bool
	wg      sync.WaitGroup // the trailing flush in flight
}

// Live returns a live flusher for the sink that flushes at most once per
// every, which must be positive.
func (k *Sink) Live(every time.Duration) *Live {
	return &Live{sink: k, every: every}
}

// Poke says parts were appended. When the interval has passed since the
// last flush it flushes now and returns that flush's error; otherwise it
// arms the trailing flush, if it is not armed. It also returns the error
// of a trailing flush that failed since the last call, once.
func (l *Live) Poke(ctx context.Context) error {
	l.mu.Lock()
	if err := l.err; err != nil {
		l.err = nil
		l.mu.Unlock()
		return err
	}
	l.ctx = ctx
	if l.timer != nil || l.stopped {
		// The armed trailing flush writes these parts too.
		l.mu.Unlock()
		return nil
	}
	if wait := l.every - time.Since(l.last); wait > 0 {
		l.wg.Add(1)
		l.timer = time.AfterFunc(wait, l.trail)
		l.mu.Unlock()
		return nil
	}
	l.last = time.Now()
	l.mu.Unlock()
	return l.sink.Flush(ctx)
}

// trail is the trailing flush.
func (l *Live) trail() {
	defer l.wg.Done()
	l.mu.Lock()
	l.timer = nil
	if l.stopped {
		l.mu.Unlock()
		return
	}
	ctx := l.ctx
	l.last = time.Now()
	l.mu.Unlock()
	if err := l.sink.Flush(ctx); err != nil {
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
	}
}

// Stop disarms the trailing flush, waits for one in flight, and returns
// the error of a trailing flush that failed and was not yet reported.
// Parts poked but not flushed stay buffered in the sink, for its owner's
// next Flush or Close. Later Pokes do nothing but report errors.
func (l *Live) Stop() error {
	l.mu.Lock()
	l.stopped = true
	if l.timer != nil && l.timer.Stop() {
		l.timer = nil
		l.wg.Done()
	}
	l.mu.Unlock()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.err
	l.err = nil
	return err
}
