package chat

import (
	"context"
	"fmt"
	"net/http"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
)

// messages handles GET /chat/{id}/messages: the chat's messages as the AI
// SDK's UIMessage[] for the caller's major. A chat that does not exist for
// the caller (new, or another caller's) has none: [].
func (h *handler) messages(w http.ResponseWriter, r *http.Request, caller string) error {
	ctx := r.Context()
	v, err := ParseVersion(r)
	if err != nil {
		return err
	}
	id, _, err := h.owned(ctx, r, caller)
	if notFound(err) {
		httpjson.Write(w, http.StatusOK, []api.ChatMessage{})
		return nil
	}
	if err != nil {
		return err
	}
	out, err := h.history(ctx, id, v)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}

// history builds chat id's messages from its facts and its turns'
// streams, along its branch (branch.go): each turn's user messages, then
// its reply; the open turn's user messages, but not its reply, which GET
// /chat/{id}/stream serves from its start (so that an app loading both
// shows it once); then the messages waiting for a turn. A message steered
// into a turn follows that turn's reply. It costs one DynamoDB query and
// one stream read per ended turn of the branch.
func (h *handler) history(ctx context.Context, id string, v Version) ([]api.ChatMessage, error) {
	facts, err := h.Sessions.Facts(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("chat: history of %s: %w", id, err)
	}
	b := branchOf(facts)
	out := []api.ChatMessage{}
	for _, t := range b.turns {
		out = h.appendUser(ctx, id, out, t.user)
		if !t.ended {
			// The open turn's reply is the resume stream's; its steered
			// messages follow it there as data-steered parts.
			break
		}
		page, err := h.Sessions.ReadStream(ctx, id, t.stream, "")
		if err != nil {
			return nil, fmt.Errorf("chat: history of %s: turn %s: %w", id, t.id, err)
		}
		ps := make([]parts.Part, len(page.Entries))
		for i, e := range page.Entries {
			ps[i] = e.Part
		}
		out = append(out, h.toolFiles(ctx, id, Reply(t.id, ps, v)))
		out = h.appendUser(ctx, id, out, t.steered)
	}
	return h.appendUser(ctx, id, out, b.inbox), nil
}

// appendUser appends msgs, user messages of chat id: a text part, and a
// file part for each file, its URL a short-lived presigned GET (the
// caller is the chat's owner: the chat id is derived from them).
func (h *handler) appendUser(ctx context.Context, id string, out []api.ChatMessage, msgs []reducer.Message) []api.ChatMessage {
	for _, m := range msgs {
		var ps []api.ChatPart
		if m.Text != "" || len(m.Files) == 0 {
			text := m.Text
			ps = append(ps, api.ChatPart{Type: "text", Text: &text})
		}
		for _, f := range m.Files {
			p := api.ChatPart{Type: "file", MediaType: f.MediaType, Filename: f.Name}
			if h.Sessions.Files != nil {
				// A presign is computed, not asked for: it fails only
				// on a store without a presigner, which leaves no URL.
				p.URL, _ = h.Sessions.Files.URL(ctx, id, f)
			}
			ps = append(ps, p)
		}
		out = append(out, api.ChatMessage{ID: m.ID, Role: "user", Parts: ps})
	}
	return out
}

// toolFiles adds after each tool part whose output carries files (a tool
// that returned some: internal/files' ToolKey) a file part for each, its
// URL a short-lived presigned GET, as for the user's files.
func (h *handler) toolFiles(ctx context.Context, id string, m api.ChatMessage) api.ChatMessage {
	if h.Sessions.Files == nil {
		return m
	}
	out := make([]api.ChatPart, 0, len(m.Parts))
	for _, p := range m.Parts {
		out = append(out, p)
		if p.State != "output-available" {
			continue
		}
		_, refs, ok := files.ToolFiles(p.Output)
		if !ok {
			continue
		}
		for _, f := range refs {
			u, _ := h.Sessions.Files.URL(ctx, id, f) // computed, not asked for
			out = append(out, api.ChatPart{Type: "file", MediaType: f.MediaType, Filename: f.Name, URL: u})
		}
	}
	m.Parts = out
	return m
}
