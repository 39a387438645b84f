package chat

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// An answer is an approval answer read from the request.
type answer struct {
	approval, toolCall string
	decision           reducer.Decision
	reason             string
}

// regenerate is the trigger of a request to answer a message again.
const regenerate = "regenerate-message"

// decodeRequest reads and checks a chat request. It returns the new user
// message (whose file parts are in in.files, to check and store: see
// ingest), or the approval answers, never both; neither for a regenerate.
func decodeRequest(w http.ResponseWriter, r *http.Request, max int64) (api.ChatRequest, *userInput, []answer, error) {
	var in api.ChatRequest
	body, err := httpjson.ReadBody(w, r, max)
	if err != nil {
		return in, nil, nil, err
	}
	if mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return in, nil, nil, httpjson.Refuse(http.StatusUnsupportedMediaType, "Content-Type must be application/json")
	} else if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return in, nil, nil, httpjson.Refuse(http.StatusUnsupportedMediaType, "request body must be UTF-8, not charset %q", cs)
	}
	if err := httpjson.DecodeObject(body, &in, false); err != nil {
		return in, nil, nil, err
	}
	switch {
	case in.ID == "":
		return in, nil, nil, httpjson.Refuse(http.StatusBadRequest, "id is required: the chat's id")
	case !validID(in.ID):
		return in, nil, nil, httpjson.Refuse(http.StatusBadRequest, "id %q is not a chat id: 1 to 128 letters, digits, '_' or '-', starting with a letter or digit", httpjson.Clip(in.ID))
	case in.Trigger != "" && in.Trigger != "submit-message" && in.Trigger != regenerate:
		return in, nil, nil, httpjson.Refuse(http.StatusBadRequest, "trigger %q is unknown: want submit-message or regenerate-message", httpjson.Clip(in.Trigger))
	case in.Trigger == regenerate && in.MessageID != "" && !validID(in.MessageID):
		return in, nil, nil, httpjson.Refuse(http.StatusBadRequest, "messageId %q is not a message id", httpjson.Clip(in.MessageID))
	case in.Trigger == regenerate:
		// The chat's copy is the server's; only messageId counts.
		return in, nil, nil, nil
	case len(in.Messages) == 0:
		return in, nil, nil, httpjson.Refuse(http.StatusBadRequest, "messages is required and must not be empty")
	}
	last := in.Messages[len(in.Messages)-1]
	switch last.Role {
	case "user":
		msg, err := userMessage(last)
		if err != nil {
			return in, nil, nil, err
		}
		return in, msg, nil, nil
	case "assistant":
		answers, err := approvalAnswers(last)
		return in, nil, answers, err
	default:
		return in, nil, nil, httpjson.Refuse(http.StatusBadRequest, "the last message has role %q: want a new user message, or the assistant message with approval answers", httpjson.Clip(last.Role))
	}
}

// userInput is a new user message and the files it names, not yet
// checked against the agent's policy nor stored.
type userInput struct {
	msg   reducer.Message
	files []files.Input
}

func userMessage(m api.UIMessage) (*userInput, error) {
	if !validID(m.ID) {
		return nil, httpjson.Refuse(http.StatusBadRequest, "the last message's id %q is not a message id: 1 to 128 letters, digits, '_' or '-'", httpjson.Clip(m.ID))
	}
	var text []string
	var fs []files.Input
	for _, p := range m.Parts {
		switch {
		case p.Type == "text":
			text = append(text, p.Text)
		case p.Type == "file":
			fs = append(fs, files.Input{MediaType: p.MediaType, URL: p.URL, Name: p.Filename})
		case strings.HasPrefix(p.Type, "data-"):
			// Application data the client keeps; the model does not see it.
		default:
			return nil, httpjson.Refuse(http.StatusBadRequest, "the last message has a part of type %q: only text and file parts are accepted", httpjson.Clip(p.Type))
		}
	}
	joined := strings.Join(text, "\n")
	if len(fs) == 0 || joined != "" {
		if err := reducer.CheckText("the last message's text", joined); err != nil {
			return nil, httpjson.Refuse(http.StatusBadRequest, "%v", err)
		}
	}
	return &userInput{msg: reducer.Message{ID: m.ID, Text: joined}, files: fs}, nil
}

func approvalAnswers(m api.UIMessage) ([]answer, error) {
	var out []answer
	for _, p := range m.Parts {
		if p.State != "approval-responded" {
			continue
		}
		if p.Approval == nil || p.Approval.ID == "" || p.Approval.Approved == nil || p.ToolCallID == "" {
			return nil, httpjson.Refuse(http.StatusBadRequest, "a tool part in state approval-responded needs toolCallId, approval.id and approval.approved")
		}
		if len(p.Approval.Reason) > 4<<10 {
			return nil, httpjson.Refuse(http.StatusBadRequest, "approval reason is longer than %d bytes", 4<<10)
		}
		d := reducer.Deny
		if *p.Approval.Approved {
			d = reducer.Approve
		}
		out = append(out, answer{approval: p.Approval.ID, toolCall: p.ToolCallID, decision: d, reason: p.Approval.Reason})
	}
	if len(out) == 0 {
		return nil, httpjson.Refuse(http.StatusBadRequest, "the last message is an assistant message with no tool part in state approval-responded: nothing to send")
	}
	return out, nil
}

// ingest checks the files of u against agent's policy and stores them in
// session id: the message to record, with their references. A refused
// file is a 4xx naming it (413 too big, 415 a type not accepted or one
// its bytes belie, 400 the rest) and nothing is stored.
func (h *handler) ingest(ctx context.Context, id, agent string, u *userInput) (*reducer.Message, error) {
	msg := u.msg
	if len(u.files) == 0 {
		return &msg, nil
	}
	refs, err := ingestFiles(ctx, h.Sessions, id, agent, u.files)
	if err != nil {
		return nil, err
	}
	msg.Files = refs
	return &msg, nil
}

// ingestFiles is ingest on a session store: its Files and FilePolicy.
func ingestFiles(ctx context.Context, ss *session.Store, id, agent string, in []files.Input) ([]reducer.File, error) {
	if ss.Files == nil {
		return nil, httpjson.Refuse(http.StatusBadRequest, "this server keeps no files: send text only")
	}
	var p files.Policy
	if ss.FilePolicy != nil {
		p = ss.FilePolicy(agent)
	}
	refs, _, err := ss.Files.Ingest(ctx, id, p, in)
	if fe := (*files.Error)(nil); errors.As(err, &fe) {
		return nil, httpjson.Refuse(fe.Status(), "%v", fe)
	}
	return refs, err
}
