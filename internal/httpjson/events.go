package httpjson

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Request budget and heartbeat defaults, for the APIs that answer with
// these helpers.
const (
	// DefaultBudget is how long a request may wait on the store before it
	// is answered 503: well under the front door's timeout (API Gateway's
	// HTTP API gives an integration 30 s; template.yaml gives the operator
	// function 29 s), so that a stalled store gets a clear answer, not a
	// gateway timeout.
	DefaultBudget = 20 * time.Second
	// DefaultHeartbeat is how often an event stream sends a comment, so
	// that a client, and every proxy between, sees it alive while no part
	// arrives (the store stalled, or the model thinks).
	DefaultHeartbeat = 15 * time.Second
	// RetryAfter is the Retry-After, in seconds, of a 503 answered because
	// the store failed or did not answer in time.
	RetryAfter = 2
)

// Unavailable sets Retry-After on a 503 that has none yet.
func Unavailable(w http.ResponseWriter) {
	if w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
	}
}

// Events writes one Server-Sent Events response: events go out whole and
// flushed, one writer at a time, and a comment heartbeat (": ping") goes
// out every interval until Close, however long the writer waits for its
// next event.
type Events struct {
	mu   sync.Mutex
	bw   *bufio.Writer
	rc   *http.ResponseController
	err  error // the first failed write; every later one fails with it
	stop chan struct{}
	done chan struct{}
}

// StartUIStream answers 200 with the headers of an AI SDK UI message
// stream (server-sent events, not cached, not buffered by a proxy) and any
// extra ones in kv (name, value pairs), and starts its heartbeat as
// StartEvents does. Close it.
func StartUIStream(w http.ResponseWriter, interval time.Duration, kv ...string) *Events {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Vercel-AI-UI-Message-Stream", "v1")
	w.WriteHeader(http.StatusOK)
	return StartEvents(w, interval)
}

// StartEvents starts the heartbeat of w, whose headers the caller has
// sent, every interval (0 or less means DefaultHeartbeat). Close it.
func StartEvents(w http.ResponseWriter, interval time.Duration) *Events {
	if interval <= 0 {
		interval = DefaultHeartbeat
	}
	e := &Events{bw: bufio.NewWriter(w), rc: http.NewResponseController(w), stop: make(chan struct{}), done: make(chan struct{})}
	go e.beat(interval)
	return e
}

func (e *Events) beat(interval time.Duration) {
	defer close(e.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			if e.Write(func(bw *bufio.Writer) error { _, err := bw.WriteString(": ping\n\n"); return err }) != nil {
				return
			}
		}
	}
}

// Write runs fn on the stream's buffer, then flushes what it wrote to the
// client; fn's error, or the write's, is returned and ends the stream.
func (e *Events) Write(fn func(*bufio.Writer) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	if err := fn(e.bw); err != nil {
		e.err = err
		return err
	}
	if err := e.bw.Flush(); err != nil {
		e.err = fmt.Errorf("write events: %w", err)
		return e.err
	}
	if err := e.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		e.err = fmt.Errorf("flush events: %w", err)
		return e.err
	}
	return nil
}

// Close stops the heartbeat and waits for it: after Close nothing more is
// written.
func (e *Events) Close() {
	close(e.stop)
	<-e.done
}
