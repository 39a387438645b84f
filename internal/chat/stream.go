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

	"github.com/baton-run/baton/internal/children"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/idempotency"
	"github.com/baton-run/baton/internal/parts"

	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// post handles POST /chat: a new user message starts (or joins the queue
// for) a turn, approval answers resume the suspended one, a regenerate or
// an edited message goes back first (branch.go); either way the answer is
// that turn's stream. Under an Idempotency-Key, a request made
// before is answered again with its turn's stream (see replay).
func (h *handler) post(w http.ResponseWriter, r *http.Request, caller string) error {
	ctx, cancel := h.budgeted(r.Context())
	defer cancel()
	v, err := ParseVersion(r)
	if err != nil {
		return err
	}
	key, done, err := h.replayKeyed(ctx, w, r, caller, v)
	if done || err != nil {
		return err
	}
	in, user, answers, err := decodeRequest(w, r, h.MaxBody)
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
	id := SessionID(caller, in.ID)
	switch {
	case in.Trigger == regenerate:
		return h.regenerate(ctx, w, r, caller, id, in.MessageID, v, key)
	case user == nil:
		return h.answer(ctx, w, r, caller, id, answers, v, key)
	}
	// The files are checked, then stored, before the message is written
	// (see files.Ingest: bytes a message refused after all leaves are
	// named by no fact, and go with the session).
	msg, err := h.ingest(ctx, id, agent, user)
	if err != nil {
		return err
	}
	if err := h.edit(ctx, id, caller, *msg); err != nil {
		return err
	}
	store := h.writer(key, func(next reducer.State) replayAt { return replayOf(id, msg.ID, next) })
	st, dup, err := store.Converse(ctx, id, caller, agent, *msg, func(st reducer.State) error {
		if st.LastSeq == 0 {
			return nil
		}
		if st.Owner != caller { // the id is derived from the caller: never so
			return httpjson.Refuse(http.StatusNotFound, "chat not found")
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
	if done, rerr := h.taken(ctx, w, r, key, v, err); done || rerr != nil {
		return rerr
	}
	if err != nil {
		return err
	}
	turn := ""
	is := func(m reducer.Message) bool { return m.ID == msg.ID }
	if st.Turn != nil && (slices.ContainsFunc(st.Turn.Steer, is) || slices.ContainsFunc(st.Turn.Steered, is) ||
		(dup && slices.ContainsFunc(st.Turn.Messages, is))) {
		// The message answers, or was steered into, the open turn.
		turn = st.Turn.ID
	} else if turn, err = h.nextTurn(ctx, id, st.LastSeq); err != nil {
		return err
	}
	page, err := h.Sessions.ReadStream(ctx, id, turn, "")
	if err != nil {
		return err
	}
	h.serve(w, r, id, turn, page, v, nil)
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
		facts, err := h.Sessions.Facts(ctx, id, seq)
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
// written. Under an Idempotency-Key, the last answer's write stores where
// the stream it answers starts.
func (h *handler) answer(ctx context.Context, w http.ResponseWriter, r *http.Request, caller, id string, answers []answer, v Version, key *idempotency.Key) error {
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
		}) || children.ChildPending(st, a.approval, a.toolCall) != ""
		if !ok {
			return httpjson.Refuse(http.StatusConflict, "approval %q for tool call %q is not pending", httpjson.Clip(a.approval), httpjson.Clip(a.toolCall))
		}
	}
	// Where the client's copy ends: the turn's last suspension.
	page, err := h.Sessions.ReadStream(ctx, id, t.Stream, "")
	if err != nil {
		return err
	}
	at := replayAt{Session: id, Stream: t.Stream, Turn: t.ID}
	for i := len(page.Entries) - 1; i >= 0; i-- {
		if page.Entries[i].Part.Type == parts.DataSuspended {
			at.Cursor = page.Entries[i].Cursor
			page.Entries = page.Entries[i+1:]
			break
		}
	}
	actor := reducer.Actor{Kind: reducer.ActorOperator, ID: caller}
	for i, a := range answers {
		store := h.Sessions
		if i == len(answers)-1 {
			store = h.writer(key, func(reducer.State) replayAt { return at })
		}
		err := store.Answer(ctx, id, actor, reducer.Answer{ApprovalID: a.approval, Decision: a.decision, Reason: a.reason})
		if done, rerr := h.taken(ctx, w, r, key, v, err); done || rerr != nil {
			return rerr
		}
		if err != nil {
			if errors.Is(err, session.ErrNotPending) {
				return httpjson.Refuse(http.StatusConflict, "approval %q is not pending", httpjson.Clip(a.approval))
			}
			return err
		}
	}
	// The client continues its last assistant message: name it, so that
	// every major keeps the turn's message id.
	h.serve(w, r, id, t.Stream, page, v, []parts.Part{{Type: parts.Start, MessageID: t.ID}})
	return nil
}

// resume handles GET /chat/{id}/stream: the open turn's stream from its
// start, live until it ends or waits for a person; 204 when no turn is
// open, and for a chat that does not exist (yet) or is another caller's,
// so that a client opening a new chat with resume on sees no error and
// learns nothing of other callers' chats.
func (h *handler) resume(w http.ResponseWriter, r *http.Request, caller string) error {
	ctx, cancel := h.budgeted(r.Context())
	defer cancel()
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
	page, err := h.Sessions.ReadStream(ctx, id, hd.Turn, "")
	if err != nil {
		return err
	}
	h.serve(w, r, id, hd.Turn, page, v, nil)
	return nil
}

// serve writes first (parts with no cursor) and page as the UI message
// stream for major v, then follows the stream until it closes, the turn
// waits for a person, the hold passes, or a read fails or outlasts the
// request budget. It ends with [DONE], and sends a comment heartbeat every
// heartbeat interval meanwhile.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, id, stream string, page streams.Page, v Version, first []parts.Part) {
	ctx := r.Context()
	ev := httpjson.StartUIStream(w, h.Heartbeat, "Connection", "keep-alive")
	defer ev.Close()
	write := func(bw *bufio.Writer, cursor streams.Cursor, p parts.Part) error {
		if err := writePart(bw, v, cursor, p); err != nil {
			return err
		}
		return h.writeToolFiles(ctx, bw, id, p)
	}
	end := func(err error) {
		if err == nil {
			err = ev.Write(func(bw *bufio.Writer) error { _, err := bw.WriteString("data: [DONE]\n\n"); return err })
		}
		if err != nil && ctx.Err() == nil {
			h.Log.DebugContext(ctx, "chat: stream ended", "session", id, "stream", stream, "err", err)
		}
	}
	if err := ev.Write(func(bw *bufio.Writer) error {
		for _, p := range first {
			if err := write(bw, "", p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		end(err)
		return
	}
	deadline := time.Now().Add(h.Hold)
	var last parts.Type
	for {
		if err := ev.Write(func(bw *bufio.Writer) error {
			for _, e := range page.Entries {
				if err := write(bw, e.Cursor, e.Part); err != nil {
					return err
				}
				last = e.Part.Type
			}
			return nil
		}); err != nil {
			end(err)
			return
		}
		if page.Closed != streams.Open {
			end(nil)
			return
		}
		if len(page.Entries) == 0 && (last == parts.DataSuspended || last == "") {
			// Caught up with a suspension, or with a stream that shows
			// nothing new yet: stop if the turn waits for a person.
			if done, err := h.stopsHere(ctx, id, stream); done || err != nil {
				end(err)
				return
			}
		}
		if !httpjson.Wait(ctx, deadline, pollInterval) {
			end(ctx.Err())
			return
		}
		rctx, cancel := h.budgeted(ctx)
		next, err := h.Sessions.ReadStream(rctx, id, stream, page.Cursor)
		cancel()
		if err != nil {
			end(err)
			return
		}
		page = next
	}
}

// writePart writes p, as major v has it, as one event of the UI message
// stream, whose id is cursor when there is one.
func writePart(bw *bufio.Writer, v Version, cursor streams.Cursor, p parts.Part) error {
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

// writeToolFiles writes, after a tool's output that carries files (a
// tool that returned some: internal/files' ToolKey), a file chunk for
// each, its URL a short-lived presigned GET for the chat's owner, which
// useChat adds to the message as a file part.
func (h *handler) writeToolFiles(ctx context.Context, bw *bufio.Writer, id string, p parts.Part) error {
	if p.Type != parts.ToolOutputAvailable || h.Sessions.Files == nil {
		return nil
	}
	_, refs, ok := files.ToolFiles(p.Output)
	if !ok {
		return nil
	}
	for _, f := range refs {
		u, err := h.Sessions.Files.URL(ctx, id, f)
		if err != nil {
			return err
		}
		data, err := json.Marshal(map[string]string{"type": "file", "url": u, "mediaType": f.MediaType})
		if err != nil {
			return fmt.Errorf("encode a tool's file: %w", err)
		}
		fmt.Fprintf(bw, "data: %s\n\n", data)
	}
	return nil
}

// stopsHere reports whether a stream caught up with stops following: its
// turn is no longer the open one, or waits for a person.
func (h *handler) stopsHere(ctx context.Context, id, stream string) (bool, error) {
	ctx, cancel := h.budgeted(ctx)
	defer cancel()
	sess, err := h.Sessions.Load(ctx, id)
	if err != nil {
		return true, err
	}
	return sess.State.Turn == nil || sess.State.Turn.Stream != stream || waitsForPerson(sess.State), nil
}
