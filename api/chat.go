package api

import "encoding/json"

// ChatRequest is the body of POST /chat: what the AI SDK's
// DefaultChatTransport sends, plus agent from the transport's body option.
// Only the last message is read: the server holds the chat's history.
// Other fields, which an application's body option may add, are ignored.
type ChatRequest struct {
	// ID is the chat's id, which is the session's id.
	ID string `json:"id"`
	// Messages is the client's copy of the chat. The last one is either a
	// new user message, or the assistant message whose tool parts carry
	// approval answers (state "approval-responded").
	Messages []UIMessage `json:"messages"`
	// Trigger is "submit-message" or "regenerate-message": answer the
	// message MessageID (an assistant message, or the user message it
	// answers; the last answer when empty) again, from its turn's start.
	// A submit whose last message has the id of one the chat has, with
	// other text, is an edit: the chat goes back to before that message's
	// turn and continues with the new text.
	Trigger   string `json:"trigger"`
	MessageID string `json:"messageId"`
	// Agent names the agent of a new chat; empty means the default.
	Agent string `json:"agent"`
}

// UIMessage is the part of an AI SDK UIMessage the chat endpoint reads.
type UIMessage struct {
	ID       string          `json:"id"`
	Role     string          `json:"role"`
	Parts    []UIPart        `json:"parts"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// UIPart is the part of an AI SDK UIMessage part the chat endpoint reads:
// text, and a tool part's call id, state and approval.
type UIPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text,omitempty"`
	ToolCallID string      `json:"toolCallId,omitempty"`
	State      string      `json:"state,omitempty"`
	Approval   *UIApproval `json:"approval,omitempty"`
	// MediaType, URL and Filename are a file part's: a data URL, an
	// https URL (for an agent that fetches them) or the baton-file: URL
	// of a presigned upload (POST /sessions/{id}/uploads).
	MediaType string `json:"mediaType,omitempty"`
	URL       string `json:"url,omitempty"`
	Filename  string `json:"filename,omitempty"`
}

// UIApproval is a tool part's approval: its id, and the answer once given.
type UIApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ChatMessage is a chat message as the AI SDK's UIMessage, as GET
// /chat/{id}/messages answers it: a user message's text, or an assistant
// message (one a turn, its id the turn's id) with its text, reasoning,
// step, tool and data parts.
type ChatMessage struct {
	ID       string          `json:"id"`
	Role     string          `json:"role"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Parts    []ChatPart      `json:"parts"`
}

// ChatPart is one part of a ChatMessage; only the fields its Type uses are
// set. Type is "text", "reasoning", "step-start", "tool-<name>" or
// "data-<name>".
type ChatPart struct {
	Type string `json:"type"`
	// ID names a data part.
	ID               string          `json:"id,omitempty"`
	Text             *string         `json:"text,omitempty"`
	State            string          `json:"state,omitempty"`
	ProviderMetadata json.RawMessage `json:"providerMetadata,omitempty"`

	ToolCallID           string          `json:"toolCallId,omitempty"`
	Input                json.RawMessage `json:"input,omitempty"`
	Output               json.RawMessage `json:"output,omitempty"`
	ErrorText            string          `json:"errorText,omitempty"`
	CallProviderMetadata json.RawMessage `json:"callProviderMetadata,omitempty"`
	// Approval is set in majors 6 and 7 only.
	Approval *UIApproval `json:"approval,omitempty"`

	Data json.RawMessage `json:"data,omitempty"`

	// MediaType, URL and Filename are a file part's: URL is a
	// short-lived presigned GET of the file, made for the chat's owner.
	MediaType string `json:"mediaType,omitempty"`
	URL       string `json:"url,omitempty"`
	Filename  string `json:"filename,omitempty"`
}
