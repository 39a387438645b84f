package chat

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/idempotency"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// A chat's branch is its conversation as a rewind leaves it: a regenerate
// (trigger regenerate-message) rewinds to the start of the turn that
// answered, and answers its messages afresh; an edit (a submit whose
// message has the id of one the chat has, with other text) rewinds to just
// before that message's turn and sends the new text. The turns rewound
// away stay in the facts, for audit, but not in the chat's history.

// branchTurn is one turn of the chat's branch.
type branchTurn struct {
	id, stream string
	user       []reducer.Message // the messages it answers
	steered    []reducer.Message // steered into it
	ended      bool
}

// branch is a chat's turns, in order, and the messages waiting for one.
type branch struct {
	turns []branchTurn
	inbox []reducer.Message
}

// branchOf folds a session's facts into its branch.
func branchOf(facts []reducer.Fact) branch {
	var b branch
	open := func() *branchTurn {
		if n := len(b.turns); n > 0 && !b.turns[n-1].ended {
			return &b.turns[n-1]
		}
		return nil
	}
	for _, f := range facts {
		switch {
		case f.Type == reducer.MessageReceived && f.Message != nil:
			if t := open(); t != nil && f.Message.Delivery == reducer.SteerSteer {
				t.steered = append(t.steered, *f.Message)
			} else {
				b.inbox = append(b.inbox, *f.Message)
			}
		case f.Type == reducer.TurnStarted:
			b.turns = append(b.turns, branchTurn{id: f.Turn, stream: f.Stream, user: b.inbox})
			b.inbox = nil
		case f.Ends():
			if t := open(); t != nil {
				t.ended = true
			}
		case f.Type == reducer.SessionRewound && f.Rewind != nil:
			b.rewind(*f.Rewind)
		}
	}
	return b
}

// rewind cuts the branch back to r's point.
func (b *branch) rewind(r reducer.Rewind) {
	p := r.Point
	i := slices.IndexFunc(b.turns, func(t branchTurn) bool { return t.id == p.Turn+p.Before })
	switch {
	case i < 0:
		b.turns = nil // a fork: the point is the original's
	case p.Turn != "" && p.Step == nil:
		b.turns = b.turns[:i+1]
	default:
		b.turns = b.turns[:i]
	}
	b.inbox = slices.Clone(r.Inbox)
	if t := r.Turn; t != nil {
		b.turns = append(b.turns, branchTurn{id: t.ID, stream: t.Stream, user: t.Messages})
	}
}

// answering is the turn of the branch that answers (or is) message id.
func (b branch) answering(id string) (branchTurn, reducer.Message, bool) {
	for _, t := range b.turns {
		if t.id == id {
			return t, reducer.Message{}, true
		}
		for _, m := range t.user {
			if m.ID == id {
				return t, m, true
			}
		}
	}
	return branchTurn{}, reducer.Message{}, false
}

// regenerate handles a regenerate-message request: the turn that answered
// messageId (an assistant message, or the user message it answered; the
// chat's last turn when it is empty) runs again from its start, and the
// answer is the new turn's stream. The turn being regenerated may be open
// (it is cancelled first); another open turn refuses it with 409.
func (h *handler) regenerate(ctx context.Context, w http.ResponseWriter, r *http.Request, caller, id, messageID string, v Version, key *idempotency.Key) error {
	b, st, err := h.branch(ctx, id, caller)
	if err != nil {
		return err
	}
	if st.LastSeq == 0 {
		return httpjson.Refuse(http.StatusNotFound, "chat not found")
	}
	var t branchTurn
	switch ok := false; {
	case messageID == "" && len(b.turns) > 0:
		t = b.turns[len(b.turns)-1]
	case messageID != "":
		if t, _, ok = b.answering(messageID); !ok {
			return httpjson.Refuse(http.StatusNotFound, "the chat has no message %q to regenerate", httpjson.Clip(messageID))
		}
	default:
		return httpjson.Refuse(http.StatusConflict, "the chat has no answer to regenerate yet")
	}
	seq, err := h.goBack(ctx, id, caller, st, t, reducer.Point{Turn: t.id, Step: new(int)}, key)
	if done, rerr := h.taken(ctx, w, r, key, v, err); done || rerr != nil {
		return rerr
	}
	if err != nil {
		return err
	}
	stream, err := h.nextTurn(ctx, id, seq)
	if err != nil {
		return err
	}
	page, err := h.Sessions.ReadStream(ctx, id, stream, "")
	if err != nil {
		return err
	}
	h.serve(w, r, id, stream, page, v, nil)
	return nil
}

// edit rewinds the chat to just before the turn that answered msg's
// earlier text, when msg has the id of a message of the branch and other
// text. The caller then records msg as a new message.
func (h *handler) edit(ctx context.Context, id, caller string, msg reducer.Message) error {
	b, st, err := h.branch(ctx, id, caller)
	if err != nil || st.LastSeq == 0 {
		return err
	}
	t, was, ok := b.answering(msg.ID)
	if !ok || was.ID == "" || was.Text == msg.Text {
		return nil
	}
	_, err = h.goBack(ctx, id, caller, st, t, reducer.Point{Before: t.id}, nil)
	return err
}

// branch loads chat id's facts into its branch, with its state; a chat
// with no session yet has neither.
func (h *handler) branch(ctx context.Context, id, caller string) (branch, reducer.State, error) {
	sess, err := h.Sessions.Load(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		return branch{}, reducer.State{}, nil
	}
	if err != nil {
		return branch{}, reducer.State{}, err
	}
	if sess.State.Owner != caller {
		return branch{}, reducer.State{}, httpjson.Refuse(http.StatusNotFound, "chat not found")
	}
	facts, err := h.Sessions.Facts(ctx, id, 0)
	if err != nil {
		return branch{}, reducer.State{}, err
	}
	return branchOf(facts), sess.State, nil
}

// goBack rewinds chat id to p, a point of turn t, cancelling t first if it
// is the open turn; another open turn refuses it. Under an
// Idempotency-Key, the rewind stores where the next turn's stream starts.
// It returns the seq of the rewind's fact.
func (h *handler) goBack(ctx context.Context, id, caller string, st reducer.State, t branchTurn, p reducer.Point, key *idempotency.Key) (int64, error) {
	cancel := false
	if st.Turn != nil {
		if st.Turn.ID != t.id {
			return 0, httpjson.Refuse(http.StatusConflict, "another turn of the chat is open; stop it first")
		}
		cancel = true
	}
	store := h.writer(key, func(next reducer.State) replayAt { return replayAt{Session: id, After: next.LastSeq} })
	rw, err := store.Rewind(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: caller}, p, cancel)
	var pe *reducer.PointError
	switch {
	case errors.As(err, &pe):
		return 0, httpjson.Refuse(http.StatusConflict, "the chat cannot go back there: %s", pe.Reason)
	case errors.Is(err, session.ErrTurnOpen):
		return 0, httpjson.Refuse(http.StatusConflict, "a turn of the chat started meanwhile; stop it first")
	case err != nil:
		return 0, err
	}
	return rw.State.LastSeq, nil
}
