package model

import (
	"strings"

	"github.com/baton-run/baton/pkg/conversation"
)

// LastUserText is the text of the last user message in the request's
// conversation, its text blocks joined, or "" when it has none.
func (r Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != conversation.User {
			continue
		}
		var b strings.Builder
		for _, c := range m.Content {
			if c.Type == conversation.Text {
				b.WriteString(c.Text)
			}
		}
		return b.String()
	}
	return ""
}

// Results are the tool results the model has not answered yet: those
// after its last message, answering the calls it made there, in call
// order. They are empty when its last message made no calls (or no
// message of the model's is there yet).
func (r Request) Results() []conversation.Content {
	var out []conversation.Content
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == conversation.Assistant {
			break
		}
		if m.Role != conversation.ToolRole {
			continue
		}
		var res []conversation.Content
		for _, c := range m.Content {
			if c.Type == conversation.ToolResult {
				res = append(res, c)
			}
		}
		out = append(res, out...)
	}
	return out
}
