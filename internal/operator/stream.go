package operator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/streams"
)

// streamRoutes is the route of turn streams, read as JSON pages or as
// Server-Sent Events: hold bounds how long a read waits for new parts, and
// budget and beat are the request budget and the event heartbeat.
type streamRoutes struct {
	ownership
	streams interface {
		ReadStream(ctx context.Context, id, stream string, after streams.Cursor) (streams.Page, error)
	}
	log                *slog.Logger
	hold, budget, beat time.Duration
}

// stream serves a turn's stream parts after a cursor: as one JSON page of
// baton's parts, or, when the client accepts text/event-stream, as
// Server-Sent Events in the shape of the AI SDK's UI message stream: with
// an x-ai-sdk-version header, for that major exactly as /chat shapes it
// (chat.Version); without one, baton's parts as they are. Either way an
// open stream is watched for up to the configured hold. A JSON read is
// answered within the request budget; an event stream starts within it,
// reads each page within another, and sends heartbeats meanwhile.
func (a *streamRoutes) stream(w http.ResponseWriter, r *http.Request, caller string) error {
	sse := acceptsEventStream(r)
	deadline := time.Now().Add(a.hold)
	if !sse {
		// Leave a quarter of the budget for the read after the last wait.
		deadline = time.Now().Add(min(a.hold, a.budget-a.budget/4))
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.budget)
	defer cancel()
	id, err := pathID(r, "id", "session")
	if err != nil {
		return err
	}
	turn, err := pathID(r, "turn", "turn")
	if err != nil {
		return err
	}
	id, stream, open, err := a.turnStream(ctx, id, turn, caller)
	if err != nil {
		return err
	}
	shape := func(p parts.Part) (parts.Part, bool) { return p, true }
	if r.Header.Get(chat.VersionHeader) != "" {
		v, err := chat.ParseVersion(r)
		if err != nil {
			return err
		}
		shape = v.Map
	}
	after := r.URL.Query().Get("after")
	if sse {
		if last := r.Header.Get("Last-Event-ID"); last != "" {
			after = last
		}
	}
	cursor, err := streams.ParseCursor(after)
	if err != nil {
		return httpjson.Refuse(http.StatusBadRequest, "after is not a stream cursor: want <chunk>.<part>")
	}
	page, err := a.read(ctx, id, stream, cursor)
	if err != nil {
		return err
	}
	if !open && cursor == "" && len(page.Entries) == 0 && page.Closed == streams.Open {
		// Not the open turn, and no stream under this session by that name.
		return httpjson.Refuse(http.StatusNotFound, "turn not found")
	}
	if sse {
		a.serveEvents(w, r.Context(), id, stream, page, deadline, shape)
		return nil
	}
	for len(page.Entries) == 0 && page.Closed == streams.Open && httpjson.Wait(ctx, deadline, pollInterval) {
		if page, err = a.read(ctx, id, stream, page.Cursor); err != nil {
			return err
		}
	}
	httpjson.Write(w, http.StatusOK, api.StreamPage{Parts: streamEntries(page.Entries), Cursor: string(page.Cursor), Closed: string(page.Closed)})
	return nil
}

// turnStream checks with a read of the session's head that the session is
// the caller's, and returns its id (see owned), the turn's stream (a turn's
// stream has the turn's id, and streams live under their session, so one
// session's id never reaches another's) and whether it is the open turn's.
func (a *streamRoutes) turnStream(ctx context.Context, id, turn, caller string) (string, string, bool, error) {
	sid, h, err := a.owned(ctx, id, caller)
	if err != nil {
		return "", "", false, err
	}
	return sid, turn, h.Turn == turn, nil
}

func (a *streamRoutes) read(ctx context.Context, id, stream string, after streams.Cursor) (streams.Page, error) {
	page, err := a.streams.ReadStream(ctx, id, stream, after)
	if errors.Is(err, streams.ErrBadCursor) {
		return streams.Page{}, httpjson.Refuse(http.StatusBadRequest, "after names no part of this stream")
	}
	if err != nil {
		return streams.Page{}, err
	}
	return page, nil
}

// acceptsEventStream reports whether the Accept header names
// text/event-stream.
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for item := range strings.SplitSeq(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(item)); err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// serveEvents writes page, then keeps polling the stream until it closes
// or deadline passes. Each part is an event whose id is its cursor and whose
// data is the part's JSON, so a client reconnects with Last-Event-ID. A
// closed stream ends with one event named close whose data is [DONE]: the
// AI SDK ignores event names and skips [DONE], and an EventSource client
// listens for close to stop reconnecting. An open stream's response just
// ends at the deadline, or when a read fails or outlasts the request
// budget, and the client reconnects. A comment heartbeat goes out every
// heartbeat interval meanwhile.
func (a *streamRoutes) serveEvents(w http.ResponseWriter, ctx context.Context, id, stream string, page streams.Page, deadline time.Time, shape func(parts.Part) (parts.Part, bool)) {
	ev := httpjson.StartUIStream(w, a.beat)
	defer ev.Close()
	send := func(p streams.Page) error {
		return ev.Write(func(bw *bufio.Writer) error {
			for _, e := range p.Entries {
				part, ok := shape(e.Part)
				if !ok {
					continue
				}
				data, err := json.Marshal(part)
				if err != nil {
					return fmt.Errorf("encode part %s: %w", e.Cursor, err)
				}
				fmt.Fprintf(bw, "id: %s\ndata: %s\n\n", e.Cursor, data)
			}
			if p.Closed != streams.Open {
				bw.WriteString("event: close\ndata: [DONE]\n\n")
			}
			return nil
		})
	}
	for {
		if err := send(page); err != nil {
			a.log.DebugContext(ctx, "operator: event stream ended", "session", id, "stream", stream, "err", err)
			return
		}
		if page.Closed != streams.Open || !httpjson.Wait(ctx, deadline, pollInterval) {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, a.budget)
		next, err := a.read(rctx, id, stream, page.Cursor)
		cancel()
		if err != nil {
			// Headers are sent: end the response; the client reconnects
			// from the last event it got.
			if ctx.Err() == nil {
				a.log.ErrorContext(ctx, "operator: read stream", "session", id, "stream", stream, "err", err)
			}
			return
		}
		page = next
	}
}

// streamEntries is a stream page's entries as the API answers them (nil,
// answered null, when the page has none).
func streamEntries(es []streams.Entry) []api.StreamEntry {
	if es == nil {
		return nil
	}
	out := make([]api.StreamEntry, len(es))
	for i, e := range es {
		out[i] = api.StreamEntry{Cursor: string(e.Cursor), Part: e.Part}
	}
	return out
}
