package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds Rewind and Fork: going back to a point of a session's
// conversation (reducer.Point), in the session itself or in a new one.
// Both write a snapshot of the conversation at the point first, under a
// key no other writer uses, then the session.rewound fact that names it,
// so a crash or a lost race between the two leaves the session as it was.

var (
	// ErrPointGone: what the point needs (its snapshot) was swept by
	// retention.
	ErrPointGone = errors.New("session: the point's snapshot is gone")
)

// Rewound is what a rewind or a fork did.
type Rewound struct {
	// Session is the session rewound: the fork, for a fork.
	Session string
	State   reducer.State
	Rewind  reducer.Rewind
}

// Rewind takes session id back to point p: later loads rebuild the
// conversation at p, and the facts and streams after it stay for audit.
// A turn open at the time refuses it with ErrTurnOpen, unless cancel is
// set: then the turn is cancelled first, as Cancel does (its children,
// claims and pending approvals settled by the same rules). A point that
// names no place in the session fails with a *reducer.PointError; either
// way nothing is written. The answer lists the side-effect executions
// after p, which going back does not undo. A point that leaves messages
// to answer (a step point) wakes the session.
func (s *ops) Rewind(ctx context.Context, id string, actor reducer.Actor, p reducer.Point, cancel bool) (Rewound, error) {
	return s.rewind(ctx, id, id, actor, p, cancel)
}

// Fork makes session to, for id's owner and agent, holding id's
// conversation at point p, as Rewind would leave id; id is unchanged
// (but for the cancel of its open turn, when cancel is set). It fails
// like Rewind, and with ErrConflict if to is taken.
func (s *ops) Fork(ctx context.Context, id, to string, actor reducer.Actor, p reducer.Point, cancel bool) (Rewound, error) {
	if to == id {
		return Rewound{}, fmt.Errorf("session: fork %s onto itself", id)
	}
	return s.rewind(ctx, id, to, actor, p, cancel)
}

func (s *ops) rewind(ctx context.Context, id, to string, actor reducer.Actor, p reducer.Point, cancel bool) (Rewound, error) {
	if err := p.Check(); err != nil {
		return Rewound{}, fmt.Errorf("session: rewind %s: %w", id, err)
	}
	var out Rewound
	cancelled := false
	err := s.retry(ctx, func() error {
		sess, err := s.Load(ctx, id)
		if err != nil {
			return err
		}
		if t := sess.State.Turn; t != nil {
			if !cancel || cancelled {
				return fmt.Errorf("session: rewind %s: %w (%s, turn %s)", id, ErrTurnOpen, sess.State.Status, t.ID)
			}
			if err := s.root().Cancel(ctx, id, actor, "cancelled to go back to "+p.String()); err != nil && !errors.Is(err, ErrNoTurn) {
				return err
			}
			cancelled = true
			if sess, err = s.Load(ctx, id); err != nil {
				return err
			}
			if sess.State.Turn != nil {
				return fmt.Errorf("session: rewind %s: %w (a new turn %s started)", id, ErrTurnOpen, sess.State.Turn.ID)
			}
		}
		pl, err := s.plan(ctx, id, p)
		if err != nil {
			return err
		}
		if to != id {
			pl.rewind.From = id
			// The fork keeps its own copy of the files its
			// conversation names (internal/files), written first.
			if s.Files != nil {
				if _, err := s.Files.CopySession(ctx, id, to); err != nil {
					return fmt.Errorf("session: fork %s: %w", id, err)
				}
			}
		}
		out, err = s.commitRewind(ctx, sess, to, actor, pl)
		return err
	})
	if err != nil {
		return Rewound{}, err
	}
	if out.State.Turn != nil || len(out.State.Inbox) > 0 {
		s.wake(ctx, to, wake.Rewound, 0, 0)
	}
	return out, nil
}

// plan is a rewind decided: the fact's payload, the conversation at the
// point, and the reopened turn's stream.
type plan struct {
	rewind  reducer.Rewind
	history []conversation.Message
	prefix  []parts.Part
}

// commitRewind writes pl to session to: its snapshot, the reopened
// turn's stream, then the fact (after session.created for a fork).
func (s *ops) commitRewind(ctx context.Context, sess *Session, to string, actor reducer.Actor, pl plan) (Rewound, error) {
	st := sess.State
	var facts []reducer.Fact
	if to != sess.ID {
		st = reducer.State{}
		facts = append(facts, reducer.Fact{Type: reducer.SessionCreated, Actor: actor, Agent: sess.State.Agent, Owner: sess.State.Owner})
	}
	if t := pl.rewind.Turn; t != nil {
		t.ID = ids.New("turn")
		t.Stream = t.ID
	}
	r := pl.rewind
	facts = append(facts, reducer.Fact{Type: reducer.SessionRewound, Actor: actor, Rewind: &r})
	s.number(st, facts)
	f := &facts[len(facts)-1]
	f.Snapshot = streams.SnapshotKey(to, f.Seq)
	next, err := st.Apply(facts...)
	if err != nil {
		return Rewound{}, err
	}
	if err := s.streams.PutSnapshot(ctx, f.Snapshot, Snapshot{Session: to, State: next, Messages: pl.history}); err != nil {
		return Rewound{}, fmt.Errorf("session: rewind %s: snapshot: %w", to, err)
	}
	if t := r.Turn; t != nil {
		for i, p := range pl.prefix {
			if p.Type == parts.Start {
				pl.prefix[i].MessageID = t.ID // the reopened turn's message, not the original's
			}
		}
		sink := s.OpenStream(to, t.Stream)
		if err := sink.Append(pl.prefix...); err != nil {
			return Rewound{}, fmt.Errorf("session: rewind %s: copy the turn's steps: %w", to, err)
		}
		if err := sink.Flush(ctx); err != nil {
			return Rewound{}, fmt.Errorf("session: rewind %s: copy the turn's steps: %w", to, err)
		}
	}
	if err := s.appendFacts(ctx, to, next, facts); err != nil {
		return Rewound{}, fmt.Errorf("session: rewind %s: %w", to, err)
	}
	return Rewound{Session: to, State: next, Rewind: r}, nil
}

// plan finds point p in session id's facts and streams.
func (s *ops) plan(ctx context.Context, id string, p reducer.Point) (plan, error) {
	facts, err := s.facts.Facts(ctx, id, 0)
	if err != nil {
		return plan{}, fmt.Errorf("session: rewind %s: read facts: %w", id, err)
	}
	name := p.Turn + p.Before
	start := slices.IndexFunc(facts, func(f reducer.Fact) bool { return opens(f) == name })
	if start < 0 {
		return plan{}, fmt.Errorf("session: rewind %s: %w", id, &reducer.PointError{Reason: fmt.Sprintf("the session has no turn %q", name)})
	}
	var pl plan
	if p.Before == "" && p.Step == nil {
		end := slices.IndexFunc(facts[start:], func(f reducer.Fact) bool { return f.Ends() && f.Turn == name })
		if end < 0 {
			return plan{}, fmt.Errorf("session: rewind %s: %w", id, &reducer.PointError{Reason: fmt.Sprintf("turn %q has not ended", name)})
		}
		f := facts[start+end]
		if pl.history, pl.rewind.Compactions, err = s.snapshotAt(ctx, id, f); err != nil {
			return plan{}, err
		}
		pl.rewind.Seq = f.Seq
	} else {
		base := facts[start]
		if base.Type == reducer.TurnStarted {
			base = reducer.Fact{}
			for i := start - 1; i >= 0 && base.Snapshot == ""; i-- {
				base = facts[i]
			}
		}
		if base.Snapshot != "" {
			if pl.history, pl.rewind.Compactions, err = s.snapshotAt(ctx, id, base); err != nil {
				return plan{}, err
			}
		}
		pl.rewind.Seq = facts[start].Seq - 1
		if p.Step != nil {
			if err := s.planStep(ctx, id, facts, start, *p.Step, &pl); err != nil {
				return plan{}, err
			}
		}
	}
	pl.rewind.Point = p
	pl.rewind.Effects, err = s.effects(ctx, id, facts, pl)
	return pl, err
}

// opens is the turn fact f opens: a turn.started's, or the turn a
// session.rewound reopened; "" for any other fact.
func opens(f reducer.Fact) string {
	switch {
	case f.Type == reducer.TurnStarted:
		return f.Turn
	case f.Type == reducer.SessionRewound && f.Rewind != nil && f.Rewind.Turn != nil:
		return f.Rewind.Turn.ID
	}
	return ""
}

// snapshotAt reads the conversation in the snapshot fact f names, and the
// compactions it had been through.
func (s *ops) snapshotAt(ctx context.Context, id string, f reducer.Fact) ([]conversation.Message, int, error) {
	var sn Snapshot
	err := s.streams.GetSnapshot(ctx, f.Snapshot, &sn)
	if errors.Is(err, streams.ErrNotFound) {
		return nil, 0, fmt.Errorf("session: rewind %s: snapshot at %d: %w", id, f.Seq, ErrPointGone)
	}
	if err == nil {
		err = checkSnapshot(id, f, sn)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("session: rewind %s: snapshot at %d: %w", id, f.Seq, err)
	}
	return sn.Messages, sn.State.Compactions, nil
}

// planStep plans a point after step steps of the turn facts[start]
// opens: at 0 its messages go back to the inbox, to be answered afresh;
// later, a new turn reopens with those steps in its stream.
func (s *ops) planStep(ctx context.Context, id string, facts []reducer.Fact, start, step int, pl *plan) error {
	st, err := reducer.Reduce(facts[:start+1])
	if err != nil || st.Turn == nil {
		return fmt.Errorf("session: rewind %s: the turn at %d: %w", id, facts[start].Seq, errors.Join(err, ErrNoTurn))
	}
	t := st.Turn
	if step == 0 {
		for _, m := range t.Messages {
			pl.rewind.Inbox = append(pl.rewind.Inbox, reducer.Message{ID: m.ID, Text: m.Text, Trace: m.Trace})
		}
		return nil
	}
	page, err := s.ReadStream(ctx, id, t.Stream, "")
	if err != nil {
		return fmt.Errorf("session: rewind %s: read turn %s: %w", id, t.ID, err)
	}
	ps := make([]parts.Part, 0, len(page.Entries))
	for _, e := range page.Entries {
		ps = append(ps, e.Part)
	}
	prefix, err := cutAfter(ps, step)
	if err != nil {
		return fmt.Errorf("session: rewind %s: %w", id, err)
	}
	// The whole turn's facts up to its end tell which calls of the prefix
	// ran, were answered or settled.
	end := len(facts)
	for i := start + 1; i < len(facts); i++ {
		if facts[i].Ends() && facts[i].Turn == t.ID {
			end = i + 1
			break
		}
	}
	whole := *t
	for _, f := range facts[start+1 : end] {
		switch {
		case f.Turn != t.ID:
		case f.Execution != nil && f.Type == reducer.ExecutionStarted:
			whole.Executions = append(whole.Executions, *f.Execution)
		case f.Answer != nil:
			whole.Answers = append(whole.Answers, *f.Answer)
		case f.Settled != nil:
			whole.Verdicts = append(whole.Verdicts, *f.Settled)
		case f.Guard != nil:
			whole.Guards = append(whole.Guards, *f.Guard)
		}
	}
	in := map[string]bool{}
	rt := conversation.Replay(prefix)
	for _, st := range rt.Steps {
		for _, c := range st.Calls {
			in[c.ID] = true
		}
	}
	keep := func(call string) bool { return in[call] }
	re := &reducer.Turn{Messages: t.Messages, Trace: t.Trace, Version: t.Version, Latest: t.Version, Invocations: 1, Usage: rt.Usage()}
	for _, e := range whole.Executions {
		if keep(e.ToolCallID) {
			re.Executions = append(re.Executions, e)
		}
	}
	for _, a := range whole.Answers {
		if keep(a.ToolCallID) {
			re.Answers = append(re.Answers, a)
		}
	}
	for _, v := range whole.Verdicts {
		if keep(v.ToolCallID) {
			re.Verdicts = append(re.Verdicts, v)
		}
	}
	for _, g := range whole.Guards {
		if g.Stage == guard.Input || g.Step < step {
			re.Guards = append(re.Guards, g)
		}
	}
	pl.rewind.Turn, pl.prefix = re, prefix
	return nil
}

// cutAfter is the parts of a turn's stream through its first n steps and
// their tool results: everything before the next step starts, or before
// the stream's end. A step whose calls have no result there, a turn with
// fewer steps, and a prefix that compacted or steered (whose model input
// a copy cannot rebuild alone) are refused.
func cutAfter(ps []parts.Part, n int) ([]parts.Part, error) {
	var r conversation.Replayer
	cut := -1
	for i, p := range ps {
		if p.Type == parts.StartStep && len(r.Turn().Steps) == n {
			cut = i
			break
		}
		if p.Type == parts.Finish || p.Type == parts.Error {
			cut = i
			break
		}
		r.Add(p)
	}
	if cut < 0 {
		cut = len(ps)
	}
	t := r.Turn()
	switch {
	case len(t.Steps) < n:
		return nil, &reducer.PointError{Reason: fmt.Sprintf("the turn has %d steps, not %d", len(t.Steps), n)}
	case len(t.Pending()) > 0:
		return nil, &reducer.PointError{Reason: fmt.Sprintf("step %d's call %s has no result", n, t.Pending()[0].ID)}
	case t.Through > 0 || len(t.Steered) > 0:
		return nil, &reducer.PointError{Reason: "the turn compacted or steered before that step; go back to its start or its end"}
	}
	out := make([]parts.Part, 0, cut)
	for _, p := range ps[:cut] {
		switch p.Type {
		case parts.DataSuspended, parts.DataResumed, parts.DataSteered, parts.DataCompacted:
			continue // the invocations of the turn gone back from; not this one's
		}
		out = append(out, p)
	}
	for _, st := range t.Steps {
		if len(st.Steered) > 0 {
			return nil, &reducer.PointError{Reason: "the turn steered before that step; go back to its start or its end"}
		}
	}
	return out, nil
}

// effects are the side-effect executions the session recorded after the
// point pl goes back to: a point within a turn keeps its prefix's.
func (s *ops) effects(ctx context.Context, id string, facts []reducer.Fact, pl plan) ([]reducer.Effect, error) {
	kept := map[string]bool{}
	if t := pl.rewind.Turn; t != nil {
		for _, e := range t.Executions {
			kept[e.ID] = true
		}
	}
	stream := map[string]string{} // turn -> stream
	var out []reducer.Effect
	for _, f := range facts {
		if t := opens(f); t != "" {
			stream[t] = t
			if f.Stream != "" {
				stream[t] = f.Stream
			}
		}
		if f.Type != reducer.ExecutionStarted || f.Execution == nil || f.Seq <= pl.rewind.Seq || kept[f.Execution.ID] {
			continue
		}
		e := f.Execution
		out = append(out, reducer.Effect{Turn: f.Turn, Execution: e.ID, ToolCallID: e.ToolCallID, Tool: e.Tool})
	}
	results := map[string]map[string]bool{} // turn -> calls with a result
	for i, e := range out {
		done, ok := results[e.Turn]
		if !ok {
			page, err := s.ReadStream(ctx, id, stream[e.Turn], "")
			if err != nil {
				return nil, fmt.Errorf("session: rewind %s: read turn %s: %w", id, e.Turn, err)
			}
			done = map[string]bool{}
			for _, en := range page.Entries {
				if p := en.Part; p.ToolCallID != "" && p.Type == parts.ToolOutputAvailable {
					done[p.ToolCallID] = true
				}
			}
			results[e.Turn] = done
		}
		out[i].Completed = done[e.ToolCallID]
	}
	return out, nil
}
