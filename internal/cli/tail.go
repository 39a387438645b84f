package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/pkg/reducer"
)

// Reconnection of a tail: after a failed or dropped read it waits
// retryFirst, doubling up to retryMax, and gives up after maxRetries
// failures in a row. A read that delivered events resets the count.
const (
	retryFirst = 200 * time.Millisecond
	retryMax   = 5 * time.Second
	maxRetries = 10
	// streamIdle is how long a stream read may go without a byte (the
	// server ends a held read well before) before it counts as dropped.
	streamIdle = 90 * time.Second
	// maxEventLine bounds one line of an event stream.
	maxEventLine = 8 << 20
)

func (e *env) tail(ctx context.Context, args []string) error {
	c := e.flags("tail", true)
	var untilIdle bool
	var color string
	c.fs.BoolVar(&untilIdle, "until-idle", false, "exit 0 once the session is idle with nothing waiting")
	c.fs.StringVar(&color, "color", "auto", "auto, always or never")
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	var colored bool
	switch color {
	case "auto":
		colored = isTerminal(e.stdout) && e.getenv("NO_COLOR") == ""
	case "always":
		colored = true
	case "never":
	default:
		return usagef("--color must be auto, always or never, not %q", color)
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	f := &follower{cl: cl, session: pos[0], poll: e.poll, untilIdle: untilIdle, log: e.stderr,
		out: newRenderer(e.stdout, pos[0], colored, c.json)}
	return f.run(ctx)
}

// follower tails one session.
type follower struct {
	cl        *api.Client
	session   string
	poll      time.Duration
	untilIdle bool
	out       *renderer
	log       io.Writer // notes on reconnections
	seen      map[string]bool
}

// run follows the open turn, if any, then every turn the session's facts
// show starting, until ctx is done or, with untilIdle, the session is idle
// with no message waiting.
func (f *follower) run(ctx context.Context) error {
	f.seen = map[string]bool{}
	s, err := f.cl.Session(ctx, f.session)
	if err != nil {
		return err
	}
	after := s.LastSeq
	if f.untilIdle && s.Turn == nil && s.Status == reducer.Idle && s.Inbox == 0 {
		f.out.note("session %s is idle with nothing waiting (%d turns, the last fact %s): nothing to follow; baton show %s has its state",
			f.session, s.Turns, lastFact(s), f.session)
		return nil
	}
	if s.Turn != nil {
		if err := f.turn(ctx, s.Turn.ID); err != nil {
			return err
		}
	} else if !f.untilIdle {
		f.out.note("session %s has no open turn; waiting for one", f.session)
	}
	for {
		var facts api.Facts
		if err := f.retry(ctx, "read facts", func() (err error) { facts, err = f.cl.Facts(ctx, f.session, after); return err }); err != nil {
			return err
		}
		for _, fact := range facts.Facts {
			after = fact.Seq
			f.out.fact(fact)
			if fact.Type == reducer.TurnStarted && !f.seen[fact.Turn] {
				if err := f.turn(ctx, fact.Turn); err != nil {
					return err
				}
			}
		}
		if len(facts.Facts) > 0 {
			continue // the turns followed may have taken a while
		}
		if f.untilIdle {
			if err := f.retry(ctx, "read session", func() (err error) {
				s, err = f.cl.Session(ctx, f.session)
				return err
			}); err != nil {
				return err
			}
			if s.Status == reducer.Idle && s.Inbox == 0 && s.LastSeq <= after {
				return nil
			}
		}
		if err := sleep(ctx, f.poll); err != nil {
			return err
		}
	}
}

// lastFact names the session's last fact, for a note.
func lastFact(s api.Session) string {
	if s.Last == "" {
		return "unknown"
	}
	return string(s.Last)
}

// retry calls op until it succeeds, fails for good, or fails maxRetries
// times in a row for want of an answer or with a 5xx or 429.
func (f *follower) retry(ctx context.Context, what string, op func() error) error {
	wait := retryFirst
	for n := 1; ; n++ {
		err := op()
		if err == nil || !transient(err) || n >= maxRetries {
			return err
		}
		fmt.Fprintf(f.log, "baton: tail: %s: %v; retrying in %s\n", what, err, wait)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, retryMax)
	}
}

// transient reports whether a failed request may succeed if sent again.
func transient(err error) bool {
	if _, ok := errors.AsType[*api.UnreachableError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*droppedError](err); ok {
		return true
	}
	if ae, ok := errors.AsType[*api.StatusError](err); ok {
		return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests
	}
	return false
}

// droppedError is an event stream that ended in the middle, or stalled.
type droppedError struct{ err error }

func (e *droppedError) Error() string { return "stream dropped: " + e.err.Error() }
func (e *droppedError) Unwrap() error { return e.err }

// turn renders turn's stream from its first part until it closes, reading
// it as Server-Sent Events and resuming from the last event received
// (Last-Event-ID) whenever a read ends before the stream closed.
func (f *follower) turn(ctx context.Context, turn string) error {
	f.seen[turn] = true
	f.out.turnStarted(turn)
	var cursor string
	fails := 0
	wait := retryFirst
	for {
		got, closed, err := f.read(ctx, turn, &cursor)
		switch {
		case closed:
			f.out.turnClosed()
			return nil
		case err == nil:
			// The server ended a read of an open stream: read on, at once
			// if it delivered parts, else after a poll interval (a server
			// that does not hold reads answers at once).
			fails, wait = 0, retryFirst
			if got == 0 {
				if err := sleep(ctx, f.poll); err != nil {
					return err
				}
			}
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case !transient(err):
			if ae, ok := errors.AsType[*api.StatusError](err); ok && ae.Status == http.StatusNotFound && cursor == "" {
				// The turn ended before it streamed anything.
				f.out.note("turn %s has no stream", turn)
				return nil
			}
			return err
		}
		if got > 0 {
			fails, wait = 0, retryFirst
		}
		if fails++; fails >= maxRetries {
			return err
		}
		fmt.Fprintf(f.log, "baton: tail: %v; resuming after %s\n", err, wait)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, retryMax)
	}
}

// read makes one event-stream request for turn's parts after *cursor,
// renders each event as it arrives and advances *cursor past it. It
// returns how many parts it rendered and whether the stream closed.
func (f *follower) read(ctx context.Context, turn string, cursor *string) (int, bool, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(streamIdle, func() { cancel(errStalled) })
	defer stall.Stop()
	body, err := f.cl.Events(ctx, f.session, turn, *cursor)
	if err != nil {
		if c := context.Cause(ctx); errors.Is(c, errStalled) {
			return 0, false, &droppedError{err: c}
		}
		return 0, false, err
	}
	defer body.Close()
	br := bufio.NewReaderSize(body, 64<<10)
	got := 0
	var ev sseEvent
	for {
		line, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) && ev.empty() {
				return got, false, nil // the server ended a held read
			}
			if c := context.Cause(ctx); c != nil && errors.Is(c, errStalled) {
				err = c
			} else if ctx.Err() != nil {
				return got, false, ctx.Err()
			}
			// A half-received event is dropped; the next read starts after
			// the last whole one.
			return got, false, &droppedError{err: err}
		}
		stall.Reset(streamIdle)
		if line != "" {
			ev.field(line)
			continue
		}
		// A blank line dispatches the event.
		switch {
		case ev.event == "close":
			return got, true, nil
		case ev.data == "":
		default:
			var p api.Part
			if err := json.Unmarshal([]byte(ev.data), &p); err != nil {
				return got, false, fmt.Errorf("stream event %s is not a part: %w", ev.id, err)
			}
			f.out.part(api.StreamEntry{Cursor: ev.id, Part: p}, turn)
			got++
			if ev.id != "" {
				*cursor = ev.id
			}
		}
		ev = sseEvent{}
	}
}

var errStalled = errors.New("no data for " + streamIdle.String())

// sseEvent is an event being received.
type sseEvent struct {
	id, event, data string
	hasData         bool
}

func (e *sseEvent) empty() bool { return e.id == "" && e.event == "" && !e.hasData }

// field applies one non-blank line of an event stream.
func (e *sseEvent) field(line string) {
	if strings.HasPrefix(line, ":") {
		return // a comment
	}
	name, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch name {
	case "id":
		e.id = value
	case "event":
		e.event = value
	case "data":
		if e.hasData {
			e.data += "\n"
		}
		e.data += value
		e.hasData = true
	}
}

// readLine reads one line without its line ending. A line cut off by the
// end of the body is an error: io.ErrUnexpectedEOF when some of it came.
func readLine(br *bufio.Reader) (string, error) {
	var sb strings.Builder
	for {
		chunk, err := br.ReadSlice('\n')
		sb.Write(chunk)
		if sb.Len() > maxEventLine {
			return "", fmt.Errorf("an event stream line is longer than %d bytes", maxEventLine)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && sb.Len() > 0 {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(sb.String(), "\n"), "\r"), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
