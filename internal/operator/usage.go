package operator

import (
	"context"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/children"
	"github.com/baton-run/baton/pkg/reducer"
)

// view is sessionView with a running turn's usage read from its stream
// (see liveUsage).
func (a *sessionRoutes) view(ctx context.Context, id string, st reducer.State) api.Session {
	s := sessionView(id, st)
	a.liveUsage(ctx, id, st, &s)
	s.ChildPending = children.Pending(ctx, st, a.childState, a.log)
	return s
}

// childState is a child session's state, for children.Pending.
func (a *sessionRoutes) childState(ctx context.Context, id string) (reducer.State, error) {
	sess, err := a.sessions.Load(ctx, id)
	if err != nil {
		return reducer.State{}, err
	}
	return sess.State, nil
}

// liveUsage counts in s the completed steps of st's running turn as its
// stream holds them, not as the turn's last suspension recorded them: the
// session's usage is then its recorded usage less the turn's recorded
// usage plus the stream's. Each step's message-metadata says the turn's
// usage through it, so the latest one, read back from the stream's end, is
// the turn's: one ListObjectsV2 and usually one GetObject, however long
// the turn. A session with no running turn costs nothing (a suspended
// turn's recorded usage is its stream's). When the stream cannot be read,
// or holds no step's metadata in its last session.MaxUsageChunks chunks, s keeps
// the recorded usage and says UsageStale.
func (a *sessionRoutes) liveUsage(ctx context.Context, id string, st reducer.State, s *api.Session) {
	t := st.Turn
	if t == nil || st.Status != reducer.Running || s.Turn == nil {
		return
	}
	live, ok, err := a.sessions.StreamUsage(ctx, id, t.Stream)
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
