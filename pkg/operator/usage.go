package operator

import (
	"context"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// maxLiveChunks bounds the chunks of a running turn's stream a session
// view reads to count the turn's usage.
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
// usage plus the stream's. A session with no running turn costs nothing
// (a suspended turn's recorded usage is its stream's); one with a running
// turn costs one ListObjectsV2 and at most maxLiveChunks GetObject
// requests. When the stream cannot be read, or is longer than that, s
// keeps the recorded usage and says UsageStale.
func (a *api) liveUsage(ctx context.Context, id string, st reducer.State, s *Session) {
	t := st.Turn
	if t == nil || st.Status != reducer.Running || s.Turn == nil {
		return
	}
	page, err := a.sessions.Streams.ReadChunks(ctx, id, t.Stream, "", maxLiveChunks)
	switch {
	case err != nil:
		a.log.WarnContext(ctx, "operator: read the running turn's stream for its usage", "session", id, "stream", t.Stream, "err", err)
		s.UsageStale = true
		return
	case page.More:
		s.UsageStale = true
		return
	}
	ps := make([]streams.Part, len(page.Entries))
	for i, e := range page.Entries {
		ps[i] = e.Part
	}
	live := conversation.Replay(ps).Usage()
	s.Usage = st.Usage.Sub(t.Usage).Add(live)
	s.Turn.Usage = live
}
