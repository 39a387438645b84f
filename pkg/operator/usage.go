package operator

import (
	"context"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// maxLiveChunks bounds the chunks of a running turn's stream a session
// view reads to count the turn's usage: the last chunks, for the latest
// step's metadata, or the whole stream when its steps do not say the
// turn's usage (streams written before they did).
const maxLiveChunks = 64

// lastChunks are how many of a stream's last chunks a view reads, and then
// reads again, looking for the latest step's metadata.
var lastChunks = []int{2, 16, maxLiveChunks}

// view is sessionView with a running turn's usage read from its stream
// (see liveUsage).
func (a *api) view(ctx context.Context, id string, st reducer.State) Session {
	s := sessionView(id, st)
	a.liveUsage(ctx, id, st, &s)
	return s
}

// liveUsage counts in s the completed steps of st's running turn as its
// stream holds them, not as the turn's last suspension recorded them: the
// session's usage is then its recorded usage less the turn's recorded
// usage plus the stream's. Each step's message-metadata says the turn's
// usage through it, so the latest one in the stream's last chunks is the
// turn's: usually one ListObjectsV2 and two GetObject requests, however
// long the turn. A session with no running turn costs nothing (a suspended
// turn's recorded usage is its stream's). When the stream cannot be read,
// or holds no step's metadata in its last maxLiveChunks chunks, s keeps
// the recorded usage and says UsageStale.
func (a *api) liveUsage(ctx context.Context, id string, st reducer.State, s *Session) {
	t := st.Turn
	if t == nil || st.Status != reducer.Running || s.Turn == nil {
		return
	}
	live, ok, err := a.streamUsage(ctx, id, t.Stream)
	if err != nil {
		a.log.WarnContext(ctx, "operator: read the running turn's stream for its usage", "session", id, "stream", t.Stream, "err", err)
	}
	if !ok {
		s.UsageStale = true
		return
	}
	s.Usage = st.Usage.Sub(t.Usage).Add(live)
	s.Turn.Usage = live
}

// streamUsage is the usage of a stream's completed steps: the turn usage
// its latest step's metadata says, or, for a stream whose steps do not say
// it, their sum when the stream is short enough to read whole. A stream
// with no completed step has zero usage.
func (a *api) streamUsage(ctx context.Context, id, stream string) (reducer.Usage, bool, error) {
	for _, n := range lastChunks {
		page, err := a.sessions.Streams.ReadLast(ctx, id, stream, n)
		if err != nil {
			return reducer.Usage{}, false, err
		}
		ps := make([]streams.Part, len(page.Entries))
		for i, e := range page.Entries {
			ps[i] = e.Part
		}
		dropped := false // in a step marked abandoned, read backwards
		for i := len(ps) - 1; i >= 0; i-- {
			switch ps[i].Type {
			case streams.DataAbandoned:
				dropped = true
				continue
			case streams.StartStep:
				dropped = false
				continue
			case streams.MessageMetadata:
				if !dropped {
					break
				}
				continue
			default:
				continue
			}
			if u, ok := conversation.TurnUsage(ps[i]); ok {
				return u, true, nil
			}
			// An older stream: its steps' usage must be summed.
			if page.Earlier {
				break
			}
			return conversation.Replay(ps).Usage(), true, nil
		}
		if !page.Earlier {
			return conversation.Replay(ps).Usage(), true, nil // the whole stream: no step yet
		}
	}
	return reducer.Usage{}, false, nil
}
