package batontest

import (
	"github.com/baton-run/baton/pkg/reducer"
)

// Open is the kit's handle on the session id, such as a child session a
// turn started (Session.Children).
func (k *Kit) Open(id string) *Session { return &Session{ID: id, kit: k} }

// Children are the child sessions the session's turns started, in the
// order their child.started facts were recorded.
func (s *Session) Children() []*Session {
	s.kit.tb.Helper()
	var out []*Session
	for _, f := range s.Facts() {
		if f.Type == reducer.ChildStarted && f.Child != nil {
			out = append(out, s.kit.Open(f.Child.ID))
		}
	}
	return out
}

// Delete deletes the session as Owner, its children with it: its facts,
// streams and snapshots. A session with an open turn is refused (cancel
// it first), and the error says so.
func (s *Session) Delete() error {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	return s.kit.engine.Sessions.Delete(ctx, s.ID, Owner, Owner)
}

// Cancel cancels the session's open turn as Owner, and with it the
// children it started, recursively.
func (s *Session) Cancel(reason string) {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	s.kit.fatal(s.kit.engine.Sessions.Cancel(ctx, s.ID, operatorActor(Owner), reason))
}
