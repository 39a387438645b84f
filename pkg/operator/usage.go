package operator

import (
	"context"
	"slices"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// maxLiveChunks bounds the chunks of a running turn's stream a session
// view reads back to count the turn's usage: to the latest step's
// metadata, or over the whole stream when its steps do not say the turn's
// usage (streams written before they did).
const maxLiveChunks = 64

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
// usage through it, so the latest one, read back from the stream's end, is
// the turn's: one ListObjectsV2 and usually one GetObject, however long
// the turn. A session with no running turn costs nothing (a suspended
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
// its latest kept step's metadata says, or, for a stream whose steps do
// not say it, their sum when the stream is short enough to read whole. A
// stream with no completed step has zero usage.
func (a *api) streamUsage(ctx context.Context, id, stream string) (reducer.Usage, bool, error) {
	var (
		newest  []streams.Part // the parts read, newest first
		live    reducer.Usage
		found   bool
		dropped bool // in a step marked abandoned, read backwards
	)
	whole, err := a.sessions.Streams.ReadBack(ctx, id, stream, maxLiveChunks, func(p streams.Part) bool {
		newest = append(newest, p)
		switch p.Type {
		case streams.DataAbandoned:
			dropped = true
		case streams.StartStep:
			dropped = false
		case streams.MessageMetadata:
			if !dropped {
				live, found = conversation.TurnUsage(p)
			}
		}
		return !found
	})
	switch {
	case err != nil:
		return reducer.Usage{}, false, err
	case found:
		return live, true, nil
	case whole:
		// No step says the turn's usage (an older stream) or there is no
		// step yet: sum the steps.
		slices.Reverse(newest)
		return conversation.Replay(newest).Usage(), true, nil
	}
	return reducer.Usage{}, false, nil
}
