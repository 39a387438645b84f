package batontest

import (
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

// Going back: a test rewinds a session, or forks a new one, to a point of
// its conversation (Point), as the operator API's rewind and fork do.

// Point is where Rewind and Fork go back to; End, Step and Before make
// one.
type Point = reducer.Point

// Effect is a side-effect execution after a point: going back does not
// undo it.
type Effect = reducer.Effect

// End is the point just after turn ended.
func End(turn string) Point { return Point{Turn: turn} }

// Step is the point within turn after its first n steps; Step(turn, 0)
// answers the turn's messages afresh (a regenerate).
func Step(turn string, n int) Point { return Point{Turn: turn, Step: &n} }

// Before is the point just before turn started, its messages dropped.
func Before(turn string) Point { return Point{Before: turn} }

// Turns are the ids of the session's turns in the order they opened: each
// turn.started, and each turn a rewind or fork reopened at a step.
func (s *Session) Turns() []string {
	s.kit.tb.Helper()
	var out []string
	for _, f := range s.Facts() {
		switch {
		case f.Type == reducer.TurnStarted:
			out = append(out, f.Turn)
		case f.Type == reducer.SessionRewound && f.Rewind != nil && f.Rewind.Turn != nil:
			out = append(out, f.Rewind.Turn.ID)
		}
	}
	return out
}

// Rewind takes the session back to p as Owner: the next Run answers from
// there. It returns the side effects recorded after p. A point the session
// does not have (a *reducer.PointError) or an open turn (cancel it first)
// is returned as the error, and nothing is written.
func (s *Session) Rewind(p Point) ([]Effect, error) {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	rw, err := s.kit.engine.Sessions.Rewind(ctx, s.ID, operatorActor(Owner), p, false)
	return rw.Rewind.Effects, err
}

// Fork makes a new session of Owner holding this one's conversation at p,
// which is left as it was; errors as Rewind's.
func (s *Session) Fork(p Point) (*Session, []Effect, error) {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	rw, err := s.kit.engine.Sessions.Fork(ctx, s.ID, ids.New("s"), operatorActor(Owner), p, false)
	if err != nil {
		return nil, nil, err
	}
	return s.kit.Open(rw.Session), rw.Rewind.Effects, nil
}
