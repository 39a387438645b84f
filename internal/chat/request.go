package chat

import (
	"mime"
	"net/http"
	"strings"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/httpjson"
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
// message, or the approval answers, never both; neither for a regenerate.
func decodeRequest(w http.ResponseWriter, r *http.Request, max int64) (api.ChatRequest, *reducer.Message, []answer, error) {
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
		return in, msg, nil, err
	case "assistant":
		answers, err := approvalAnswers(last)
		return in, nil, answers, err
	default:
		return in, nil, nil, httpjson.Refuse(http.StatusBadRequest, "the last message has role %q: want a new user message, or the assistant message with approval answers", httpjson.Clip(last.Role))
	}
}

func userMessage(m api.UIMessage) (*reducer.Message, error) {
	if !validID(m.ID) {
		return nil, httpjson.Refuse(http.StatusBadRequest, "the last message's id %q is not a message id: 1 to 128 letters, digits, '_' or '-'", httpjson.Clip(m.ID))
	}
	var text []string
	for _, p := range m.Parts {
		switch {
		case p.Type == "text":
			text = append(text, p.Text)
		case strings.HasPrefix(p.Type, "data-"):
			// Application data the client keeps; the model does not see it.
		default:
			return nil, httpjson.Refuse(http.StatusBadRequest, "the last message has a part of type %q: only text parts are accepted", httpjson.Clip(p.Type))
		}
	}
	joined := strings.Join(text, "\n")
	if err := reducer.CheckText("the last message's text", joined); err != nil {
		return nil, httpjson.Refuse(http.StatusBadRequest, "%v", err)
	}
	return &reducer.Message{ID: m.ID, Text: joined}, nil
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
