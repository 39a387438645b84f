package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/baton-run/baton/pkg/httpjson"

	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/session"
	"github.com/baton-run/baton/pkg/streams"
)

// post handles POST /chat: a new user message starts (or joins the queue
// for) a turn, approval answers resume the suspended one; either way the
// answer is that turn's stream.
func (h *handler) post(w http.ResponseWriter, r *http.Request, caller string) error {
	ctx := r.Context()
	v, err := ParseVersion(r)
	if err != nil {
		return err
	}
	in, msg, answers, err := decodeRequest(w, r, h.MaxBody)
	if err != nil {
		return err
	}
	agent := in.Agent
	if agent == "" {
		agent = h.DefaultAgent
	}
	switch {
	case agent == "":
		return httpjson.Refuse(http.StatusBadRequest, "agent is required: this server has no default agent")
	case !h.Agents(agent):
		return httpjson.Refuse(http.StatusUnprocessableEntity, "unknown agent %q", httpjson.Clip(agent))
	}
	if msg == nil {
		return h.answer(w, r, caller, in.ID, answers, v)
	}
	st, dup, err := h.Sessions.Converse(ctx, in.ID, caller, agent, *msg, func(st reducer.State) error {
		if st.LastSeq == 0 {
			return nil
		}
		if st.Owner != caller {
			return httpjson.Refuse(http.StatusConflict, "chat id %q is not available; choose another", httpjson.Clip(in.ID))
		}
		if in.Agent != "" && in.Agent != st.Agent {
			return httpjson.Refuse(http.StatusConflict, "chat %q runs agent %q, not %q", httpjson.Clip(in.ID), httpjson.Clip(st.Agent), httpjson.Clip(in.Agent))
		}
		// An agent that interrupts takes the message: it ends the waiting turn.
		if waitsForPerson(st) && !session.HasMessage(st, msg.ID) && h.Sessions.SteeringOf(st.Agent) != reducer.SteerInterrupt {
			return httpjson.Refuse(http.StatusConflict, "the chat's turn waits for an answer to an approval or an execution; answer it first")
		}
		return nil
	})
	if err != nil {
		return err
	}
	turn := ""
	is := func(m reducer.Message) bool { return m.ID == msg.ID }
	if st.Turn != nil && (slices.ContainsFunc(st.Turn.Steer, is) || slices.ContainsFunc(st.Turn.Steered, is) ||
		(dup && slices.ContainsFunc(st.Turn.Messages, is))) {
		// The message answers, or was steered into, the open turn.
		turn = st.Turn.ID
	} else if turn, err = h.nextTurn(ctx, in.ID, st.LastSeq); err != nil {
		return err
	}
	page, err := h.Sessions.Streams.Read(ctx, in.ID, turn, "")
	if err != nil {
		return err
	}
	h.serve(w, r, in.ID, turn, page, v, nil)
	return nil
}

// waitsForPerson reports whether the open turn is suspended until someone
// answers an approval or settles an execution.
func waitsForPerson(st reducer.State) bool {
	t := st.Turn
	if st.Status != reducer.Suspended || t == nil {
		return false
	}
	if len(t.Pending) > 0 {
		return true
	}
	if t.Uncertain != nil {
		_, settled := t.Verdict(t.Uncertain.ID)
		return !settled
	}
	return false
}

// nextTurn waits for the first turn started after fact seq: the turn that
// answers a message recorded at or before seq and still in the inbox.
func (h *handler) nextTurn(ctx context.Context, id string, seq int64) (string, error) {
	deadline := time.Now().Add(h.Hold)
	for {
		facts, err := h.Sessions.Facts.Facts(ctx, id, seq)
		if err != nil {
			return "", err
		}
		for _, f := range facts {
			if f.Type == reducer.TurnStarted {
				return f.Stream, nil
			}
			seq = f.Seq
		}
		if !httpjson.Wait(ctx, deadline, pollInterval) {
			return "", httpjson.Refuse(http.StatusServiceUnavailable, "the message is recorded but no turn started for it in time; read it later with GET /chat/{id}/stream")
		}
	}
}

// answer records approval answers from the chat, exactly as the operator
// route would, and serves the rest of the turn. Every answer must match a
// pending approval of the open turn, for the same tool call, or nothing is
// written.
func (h *handler) answer(w http.ResponseWriter, r *http.Request, caller, id string, answers []answer, v Version) error {
	ctx := r.Context()
	sess, err := h.Sessions.Load(ctx, id)
	if err != nil {
		return err
	}
	st := sess.State
	if st.Owner != caller {
		return httpjson.Refuse(http.StatusNotFound, "chat not found")
	}
	t := st.Turn
	for _, a := range answers {
		ok := t != nil && st.Status == reducer.Suspended && slices.ContainsFunc(t.Pending, func(p reducer.Approval) bool {
			return p.ID == a.approval && p.ToolCallID == a.toolCall
		})
		if !ok {
			return httpjson.Refuse(http.StatusConflict, "approval %q for tool call %q is not pending", httpjson.Clip(a.approval), httpjson.Clip(a.toolCall))
		}
	}
	// Where the client's copy ends: the turn's last suspension.
	page, err := h.Sessions.Streams.Read(ctx, id, t.Stream, "")
	if err != nil {
		return err
	}
	for i := len(page.Entries) - 1; i >= 0; i-- {
		if page.Entries[i].Part.Type == streams.DataSuspended {
			page.Entries = page.Entries[i+1:]
			break
		}
	}
	actor := reducer.Actor{Kind: reducer.ActorOperator, ID: caller}
	for _, a := range answers {
		if err := h.Sessions.Answer(ctx, id, actor, a.approval, a.decision, a.reason); err != nil {
			if errors.Is(err, session.ErrNotPending) {
				return httpjson.Refuse(http.StatusConflict, "approval %q is not pending", httpjson.Clip(a.approval))
			}
			return err
		}
	}
	// The client continues its last assistant message: name it, so that
	// every major keeps the turn's message id.
	h.serve(w, r, id, t.Stream, page, v, []streams.Part{{Type: streams.Start, MessageID: t.ID}})
	return nil
}

// resume handles GET /chat/{id}/stream: the open turn's stream from its
// start, live until it ends or waits for a person; 204 when no turn is
// open, and for a chat that does not exist (yet) or is another caller's,
// so that a client opening a new chat with resume on sees no error and
// learns nothing of other callers' chats.
func (h *handler) resume(w http.ResponseWriter, r *http.Request, caller string) error {
	ctx := r.Context()
	v, err := ParseVersion(r)
	if err != nil {
		return err
	}
	id, hd, err := h.owned(ctx, r, caller)
	if notFound(err) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	if hd.Turn == "" {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	page, err := h.Sessions.Streams.Read(ctx, id, hd.Turn, "")
	if err != nil {
		return err
	}
	h.serve(w, r, id, hd.Turn, page, v, nil)
	return nil
}

// serve writes first (parts with no cursor) and page as the UI message
// stream for major v, then follows the stream until it closes, the turn
// waits for a person, or the hold passes. It ends with [DONE].
func (h *handler) serve(w http.ResponseWriter, r *http.Request, id, stream string, page streams.Page, v Version, first []streams.Part) {
	ctx := r.Context()
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Connection", "keep-alive")
	hd.Set("X-Accel-Buffering", "no")
	hd.Set("X-Vercel-AI-UI-Message-Stream", "v1")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriter(w)
	write := func(cursor streams.Cursor, p streams.Part) error {
		p, ok := v.Map(p)
		if !ok {
			return nil
		}
		data, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode part %s: %w", cursor, err)
		}
		if cursor != "" {
			fmt.Fprintf(bw, "id: %s\n", cursor)
		}
		fmt.Fprintf(bw, "data: %s\n\n", data)
		return nil
	}
	flush := func() error {
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write events: %w", err)
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return fmt.Errorf("flush events: %w", err)
		}
		return nil
	}
	end := func(err error) {
		if err == nil {
			bw.WriteString("data: [DONE]\n\n")
			err = flush()
		}
		if err != nil && ctx.Err() == nil {
			h.Log.DebugContext(ctx, "chat: stream ended", "session", id, "stream", stream, "err", err)
		}
	}
	for _, p := range first {
		if err := write("", p); err != nil {
			end(err)
			return
		}
	}
	deadline := time.Now().Add(h.Hold)
	var last streams.PartType
	for {
		for _, e := range page.Entries {
			if err := write(e.Cursor, e.Part); err != nil {
				end(err)
				return
			}
			last = e.Part.Type
		}
		if err := flush(); err != nil {
			end(err)
			return
		}
		if page.Closed != streams.Open {
			end(nil)
			return
		}
		if len(page.Entries) == 0 && (last == streams.DataSuspended || last == "") {
			// Caught up with a suspension, or with a stream that shows
			// nothing new yet: stop if the turn waits for a person.
			sess, err := h.Sessions.Load(ctx, id)
			if err != nil || sess.State.Turn == nil || sess.State.Turn.Stream != stream || waitsForPerson(sess.State) {
				end(err)
				return
			}
		}
		if !httpjson.Wait(ctx, deadline, pollInterval) {
			end(ctx.Err())
			return
		}
		next, err := h.Sessions.Streams.Read(ctx, id, stream, page.Cursor)
		if err != nil {
			end(err)
			return
		}
		page = next
	}
}
