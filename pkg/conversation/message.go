package conversation

import (
	"encoding/json"

	"github.com/baton-run/baton/pkg/reducer"
)

// Role says who a message is from.
type Role string

// Roles. Tool results travel in a tool message right after the assistant
// message that called them.
const (
	User      Role = "user"
	Assistant Role = "assistant"
	ToolRole  Role = "tool"
)

// ContentType names a content block.
type ContentType string

// Content block types.
const (
	Text       ContentType = "text"
	Reasoning  ContentType = "reasoning"
	ToolCall   ContentType = "tool-call"
	ToolResult ContentType = "tool-result"
	// File is a file of a user message, by reference (Content.File); its
	// bytes are loaded into Content.Data just before a model call
	// (internal/files' Load), never stored with the conversation.
	File ContentType = "file"
)

// Content is one block of a message. Only the fields its Type uses are set.
type Content struct {
	Type ContentType `json:"type"`
	Text string      `json:"text,omitempty"`
	// Signature is an opaque provider token that must be echoed back with
	// the reasoning it signs (Anthropic thinking, Bedrock reasoning).
	Signature string `json:"signature,omitempty"`
	// ToolCallID names a tool call or the call a result answers. In a
	// Step it is baton's id; in the Messages of the model input it is the
	// wire id, the one the provider knows the call by (see Build).
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	// File is the reference of a File block.
	File *reducer.File `json:"file,omitempty"`
	// Data is a File block's bytes, loaded for one model call; it is not
	// part of the conversation's JSON (snapshots, facts).
	Data []byte `json:"-"`
	// Attached are the files of a ToolResult whose tool returned some,
	// split from its Output and loaded for one model call (internal/files'
	// Load); not part of the conversation's JSON either.
	Attached []Attachment `json:"-"`
}

// Attachment is a file and its bytes, loaded for one model call.
type Attachment struct {
	File reducer.File
	Data []byte
}

// Message is one entry of the model's input.
type Message struct {
	Role    Role      `json:"role"`
	Content []Content `json:"content"`
}
