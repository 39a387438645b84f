package children

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// Child sessions in the session store (see reducer's children.go):
// creating one for a parent's tool call, delivering the end of its turn to
// the parent, showing its approval requests to its ancestors, and
// cancelling the children an ended turn left running.

// Wake reasons of sub-agents.
const (
	// WakeChild: a parent turn started the child (its first message).
	WakeChild wake.Reason = "child"
	// WakeChildEnded: a child's end was delivered to the parent, or the
	// child waits to report it.
	WakeChildEnded wake.Reason = "child-ended"
)

// ErrNotChild: a session named as a turn's child is not that turn's child
// (it exists, created for something else).
var ErrNotChild = errors.New("session: not the turn's child")

// Core is the session store's small core as the children reach it, with
// the operator's Cancel and Answer, which a cascade and an answer routed
// to a child go through. Package session implements it over its core; its
// errors are the session store's (ErrConflict being dynamo.ErrConflict and
// ErrNotPending reducer.ErrNotPending, and Errors naming the others).
type Core interface {
	// Load is the session's state and the conversation of its ended turns.
	Load(ctx context.Context, id string) (reducer.State, []conversation.Message, error)
	// Append checks facts against st and writes them in one compare-and-set.
	Append(ctx context.Context, id string, st reducer.State, facts ...reducer.Fact) (reducer.State, error)
	// Transition appends the one fact next decides from the current state,
	// under the lost-race retry.
	Transition(ctx context.Context, id string, next func(reducer.State) (reducer.Fact, error)) (reducer.State, error)
	// Retry runs f again while it loses the compare-and-set.
	Retry(ctx context.Context, f func() error) error
	// Head is the session's head item, an error matching dynamo.ErrNotFound
	// when there is none.
	Head(ctx context.Context, id string) (dynamo.Head, error)
	// Wake sends the session's wake, best effort.
	Wake(ctx context.Context, id string, reason wake.Reason, seq int64, delay time.Duration)
	// Log is the store's logger.
	Log() *slog.Logger
	// Cancel and Answer are the operator's operations.
	Cancel(ctx context.Context, id string, actor reducer.Actor, reason string) error
	Answer(ctx context.Context, id string, actor reducer.Actor, a reducer.Answer) error
}

// Errors are the session store's own errors the children tell apart.
type Errors struct {
	NotFound error // no such session
	NoTurn   error // the session has no open turn
}

// Store is the session store's child sessions, over its Core: the
// session store embeds it, so that its methods are the store's.
type Store struct {
	core Core
	errs Errors
	root *Store // the children of the store without a receipt, which cascades run on
}

// New is the children over core; root is the children of the store
// without a receipt (nil: these).
func New(core Core, errs Errors, root *Store) Store {
	return Store{core: core, errs: errs, root: root}
}

// top is the children of the store without a receipt.
func (s *Store) top() *Store {
	if s.root != nil {
		return s.root
	}
	return s
}

// CreateChild creates child session c of the parent's turn, owned by
// owner, with c.Task as its first message, and wakes it. The creation is
// one conditional write of both facts, so any number of tries create it
// once: a child that exists already, for the same parent turn and call, is
// only woken again. It reports whether this call created it.
func (s *Store) CreateChild(ctx context.Context, owner string, p reducer.Parent, c reducer.Child) (bool, error) {
	actor := reducer.Actor{Kind: reducer.ActorAgent, ID: p.Turn}
	_, err := s.core.Append(ctx, c.ID, reducer.State{},
		reducer.Fact{Type: reducer.SessionCreated, Actor: actor, Agent: c.Agent, Owner: owner, Parent: &p},
		reducer.Fact{Type: reducer.MessageReceived, Actor: actor, Message: &reducer.Message{ID: "msg_" + c.ID, Text: c.Task}})
	created := err == nil
	if errors.Is(err, dynamo.ErrConflict) {
		st, _, lerr := s.core.Load(ctx, c.ID)
		if lerr != nil {
			return false, fmt.Errorf("session: child %s: %w", c.ID, lerr)
		}
		if q := st.Parent; q == nil || *q != p {
			return false, fmt.Errorf("session: child %s of %s: %w", c.ID, p.Session, ErrNotChild)
		}
		err = nil
	}
	if err != nil {
		return false, fmt.Errorf("session: create child %s: %w", c.ID, err)
	}
	s.core.Wake(ctx, c.ID, WakeChild, 0, 0)
	return created, nil
}

// Report delivers the end of child session id's last turn to its parent,
// if it waits to (reducer.ReasonReport): the parent records it once
// (child.ended; a second delivery is refused, and changes nothing), is
// woken, and the child records that it reported. Any number of Reports,
// concurrent or after a crash, deliver it once. A child deleted meanwhile
// (buried: its head is gone, its facts not yet purged) reports nothing:
// its delete delivered its end first (Delete), or deletes its parent too;
// that is an error matching the session store's ErrNotFound (Errors).
func (s *Store) Report(ctx context.Context, id string) error {
	st, history, err := s.core.Load(ctx, id)
	if err != nil {
		return err
	}
	if st.Parent == nil || st.Status != reducer.Idle || st.Turns == 0 || st.Reported {
		return nil
	}
	if _, err := s.core.Head(ctx, id); errors.Is(err, dynamo.ErrNotFound) {
		return fmt.Errorf("session: report child %s: it was deleted: %w", id, s.errs.NotFound)
	} else if err != nil {
		return fmt.Errorf("session: report child %s: %w", id, err)
	}
	c := reducer.Child{ID: id, ToolCallID: st.Parent.ToolCallID, Agent: st.Agent, Status: st.Last,
		Output: finalText(history), Usage: st.Usage}
	switch {
	case st.LastFailure != nil:
		c.Error = st.LastFailure.Error
	case st.Last != reducer.TurnCompleted:
		c.Error = "the child session's turn ended as " + strings.TrimPrefix(string(st.Last), "turn.")
	}
	p := st.Parent
	pst, err := s.core.Transition(ctx, p.Session, func(reducer.State) (reducer.Fact, error) {
		return reducer.Fact{Type: reducer.ChildEnded, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: id}, Turn: p.Turn, Child: &c}, nil
	})
	switch {
	case errors.Is(err, reducer.ErrNotPending), errors.Is(err, s.errs.NotFound):
		// Delivered before, or the parent's turn is gone: nothing waits.
	case err != nil:
		return fmt.Errorf("session: report child %s to %s: %w", id, p.Session, err)
	default:
		s.core.Wake(ctx, p.Session, WakeChildEnded, pst.LastSeq, 0)
	}
	_, err = s.core.Transition(ctx, id, func(reducer.State) (reducer.Fact, error) {
		return reducer.Fact{Type: reducer.ChildReported, Actor: reducer.Actor{Kind: reducer.ActorSystem, ID: "report"}}, nil
	})
	if err != nil && !errors.Is(err, reducer.ErrNotPending) {
		return fmt.Errorf("session: child %s reported: %w", id, err)
	}
	return nil
}

// finalText is the text of the last assistant message of a history.
func finalText(h []conversation.Message) string {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role != conversation.Assistant {
			continue
		}
		var b strings.Builder
		for _, c := range h[i].Content {
			if c.Type == conversation.Text {
				b.WriteString(c.Text)
			}
		}
		return b.String()
	}
	return ""
}

// ParentActor is who cancels a child its parent no longer waits for: the
// cascade of the parent's ended turn, or the child's own check of its
// parent (turn package) as an invocation of it starts.
var ParentActor = reducer.Actor{Kind: reducer.ActorSystem, ID: "parent"}

// OrphanReason is the reason a child cancelled for its parent records:
// it names the parent session and its turn, and what became of that turn
// (how, such as "ended as cancelled").
func OrphanReason(parent, turn, how string) string {
	return fmt.Sprintf("its parent session %s no longer waits for it: turn %s %s", parent, turn, how)
}

// Cascade cancels the children that session id's ended turns left running
// (reducer.State.Orphans: the ending fact recorded them), each with a
// reason naming the parent, and theirs in turn (each child's own end
// cascades), then records child.cancelled for each in the session. A child
// that ended meanwhile, or was never created, counts as cancelled. It is
// what every ending runs right after its fact, and what the worker runs
// for reducer.Cascade when the process died in between (the tick re-sends
// the session's wake). A child that could not be cancelled stays an
// orphan, for the next try, and is returned as an error.
func (s *Store) Cascade(ctx context.Context, id string) error {
	st, _, err := s.core.Load(ctx, id)
	if err != nil {
		return err
	}
	_, err = s.top().CascadeFrom(ctx, id, st)
	return err
}

// CascadeFrom is Cascade from st, the session's state as the caller last
// wrote or read it (the session store's End runs it on the store without a
// receipt); it returns the state after, the last one it knows of when it
// fails. It costs nothing with no orphans; else each orphan's Cancel, and
// one write of the child.cancelled facts (a load and a write again per
// lost race).
func (s *Store) CascadeFrom(ctx context.Context, id string, st reducer.State) (reducer.State, error) {
	if len(st.Orphans) == 0 {
		return st, nil
	}
	var errs []error
	done := map[reducer.Orphan]reducer.Usage{}
	for _, o := range st.Orphans {
		u, err := s.cancelOrphan(ctx, id, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		done[o] = u
	}
	cur, fresh := st, true
	err := s.core.Retry(ctx, func() error {
		if !fresh {
			st, _, err := s.core.Load(ctx, id)
			if err != nil {
				return err
			}
			cur = st
		}
		fresh = false
		var facts []reducer.Fact
		for _, o := range cur.Orphans {
			if u, ok := done[o]; ok {
				facts = append(facts, reducer.Fact{Type: reducer.ChildCancelled, Actor: ParentActor, Turn: o.Turn, Child: &reducer.Child{ID: o.ID, Usage: u}})
			}
		}
		if len(facts) == 0 {
			return nil // another cascade recorded them
		}
		next, err := s.core.Append(ctx, id, cur, facts...)
		if err == nil {
			cur = next
		}
		return err
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("session: record the cancelled children of %s: %w", id, err))
	}
	return cur, errors.Join(errs...)
}

// cancelOrphan cancels orphan o of session id (a child that ended
// already, or was never created, needs none) and returns the child
// session's usage, which its report to the parent, refused once the
// parent's turn ended, did not bring: child.cancelled counts it in the
// parent's.
func (s *Store) cancelOrphan(ctx context.Context, id string, o reducer.Orphan) (reducer.Usage, error) {
	err := s.core.Cancel(ctx, o.ID, ParentActor, OrphanReason(id, o.Turn, "ended as "+strings.TrimPrefix(string(o.Ended), "turn.")))
	switch {
	case errors.Is(err, s.errs.NotFound):
		return reducer.Usage{}, nil
	case err != nil && !errors.Is(err, s.errs.NoTurn):
		return reducer.Usage{}, fmt.Errorf("session: cancel child %s of %s: %w", o.ID, id, err)
	}
	h, err := s.core.Head(ctx, o.ID)
	switch {
	case errors.Is(err, dynamo.ErrNotFound):
		return reducer.Usage{}, nil
	case err != nil:
		return reducer.Usage{}, fmt.Errorf("session: usage of child %s of %s: %w", o.ID, id, err)
	}
	return h.Usage, nil
}

// ShowApprovals tells the parent of child session id, which st is, of the
// child's approval requests (child.approval, once each), and that parent's
// parent, on up to the root: each ancestor's open turn records the
// request under its own child the request came through, naming the child
// that asked (Fact.Asker), and is woken to show it in its stream. The walk
// up stops at an ancestor whose turn no longer waits for the child below.
// Once every request got as far as it can, the child records that
// (child.shown); until then it waits with reducer.ReasonShow, so a crash
// in between leaves the showing to its wake, which the tick re-sends. A
// failure is logged; the child's own requests, and the operator's view of
// them, stand.
func (s *Store) ShowApprovals(ctx context.Context, id string, st reducer.State, approvals []reducer.Approval) {
	shown := true
	for i := range approvals {
		if err := s.showUp(ctx, id, st, approvals[i]); err != nil {
			s.core.Log().WarnContext(ctx, "show a child's approval request to its ancestors; its wake tries again", "child", id, "err", err)
			shown = false
		}
	}
	if !shown {
		return
	}
	_, err := s.core.Transition(ctx, id, func(reducer.State) (reducer.Fact, error) {
		return reducer.Fact{Type: reducer.ChildShown, Actor: reducer.Actor{Kind: reducer.ActorSystem, ID: "show"}}, nil
	})
	if err != nil && !errors.Is(err, reducer.ErrNotPending) {
		s.core.Log().WarnContext(ctx, "record that a child's approval requests were shown; its wake tries again", "child", id, "err", err)
	}
}

// ShowPending shows the pending approval requests of child session id to
// its ancestors (ShowApprovals), if they wait to be (reducer.ReasonShow):
// the invocation that suspended it died first. Any number of calls show
// each request once.
func (s *Store) ShowPending(ctx context.Context, id string) error {
	st, _, err := s.core.Load(ctx, id)
	if err != nil {
		return err
	}
	if st.Next(time.Time{}, 0).Reason != reducer.ReasonShow {
		return nil
	}
	s.ShowApprovals(ctx, id, st, st.Turn.Pending)
	return nil
}

// showUp shows approval a, which session asker (in state st) asked for,
// to each of its ancestors, nearest first. An ancestor that showed a
// before is passed (a walk cut short by a crash goes on from there); one
// whose turn no longer waits for the child below ends the walk, with no
// error.
func (s *Store) showUp(ctx context.Context, asker string, st reducer.State, a reducer.Approval) error {
	id := asker
	for p := st.Parent; p != nil; p = st.Parent {
		child := &reducer.Child{ID: id, ToolCallID: p.ToolCallID, Agent: st.Agent}
		var seen reducer.State // the ancestor as the refused try read it
		pst, err := s.core.Transition(ctx, p.Session, func(cur reducer.State) (reducer.Fact, error) {
			seen = cur
			return reducer.Fact{Type: reducer.ChildApproval, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: id}, Turn: p.Turn,
				Child: child, Approval: &a, Asker: asker}, nil
		})
		switch {
		case errors.Is(err, reducer.ErrNotPending):
			// Shown there before (a walk a crash cut short goes on up), or
			// the ancestor's turn no longer waits for the child below.
			if t := seen.Turn; t == nil || t.ID != p.Turn {
				return nil
			} else if _, ok := t.ChildRequest(a.ID); !ok {
				return nil
			}
			pst = seen
		case errors.Is(err, s.errs.NotFound):
			return nil
		case err != nil:
			return fmt.Errorf("session: show %s's approval %s to %s: %w", asker, a.ID, p.Session, err)
		default:
			s.core.Wake(ctx, p.Session, WakeChildEnded, pst.LastSeq, 0)
		}
		id, st = p.Session, pst
	}
	return nil
}

// ChildPending is the child of st's open turn whose approval approvalID
// (for tool call toolCall; "" for any) the turn showed, "" for none: the
// child that asked, or the one the request of a deeper descendant came
// through. An answer to it goes to that child, which passes it on down
// the same way, and the reducer of the session that asked decides it.
func ChildPending(st reducer.State, approvalID, toolCall string) string {
	t := st.Turn
	if t == nil {
		return ""
	}
	r, ok := t.ChildRequest(approvalID)
	if !ok || (toolCall != "" && r.Approval.ToolCallID != toolCall) {
		return ""
	}
	if c, ok := childByID(t, r.Child); !ok || c.Ended() {
		return ""
	}
	return r.Child
}

func childByID(t *reducer.Turn, id string) (reducer.Child, bool) {
	for _, c := range t.Children {
		if c.ID == id {
			return c, true
		}
	}
	return reducer.Child{}, false
}

// AnswerChild routes answer a to its approval, which the own turn of
// session id (in state st, as the refused answer read it) does not wait
// for, to the child whose request its turn showed: the answer is the
// child's to check and record, or to pass on down to the descendant that
// asked. It reports whether there was such a child.
func (s *Store) AnswerChild(ctx context.Context, st reducer.State, actor reducer.Actor, a reducer.Answer) (bool, error) {
	child := ChildPending(st, a.ApprovalID, "")
	if child == "" {
		return false, nil
	}
	return true, s.core.Answer(ctx, child, actor, a)
}
