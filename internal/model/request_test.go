package model

import (
	"encoding/json"
	"testing"

	"github.com/baton-run/baton/pkg/conversation"
)

func TestRequestHelpers(t *testing.T) {
	text := func(role conversation.Role, s string) conversation.Message {
		return conversation.Message{Role: role, Content: []conversation.Content{{Type: conversation.Text, Text: s}}}
	}
	result := func(id string) conversation.Content {
		return conversation.Content{Type: conversation.ToolResult, ToolCallID: id, Output: json.RawMessage(`1`)}
	}
	call := conversation.Message{Role: conversation.Assistant, Content: []conversation.Content{
		{Type: conversation.ToolCall, ToolCallID: "a"}, {Type: conversation.ToolCall, ToolCallID: "b"}}}
	for _, tc := range []struct {
		name    string
		msgs    []conversation.Message
		user    string
		results []string
	}{
		{"empty", nil, "", nil},
		{"a question", []conversation.Message{text(conversation.User, "hi")}, "hi", nil},
		{"results pending", []conversation.Message{text(conversation.User, "first"), text(conversation.Assistant, "ok"),
			text(conversation.User, "second"), call,
			{Role: conversation.ToolRole, Content: []conversation.Content{result("a"), result("b")}}}, "second", []string{"a", "b"}},
		{"results answered", []conversation.Message{text(conversation.User, "q"), call,
			{Role: conversation.ToolRole, Content: []conversation.Content{result("a")}}, text(conversation.Assistant, "done")}, "q", nil},
	} {
		r := Request{Messages: tc.msgs}
		if got := r.LastUserText(); got != tc.user {
			t.Errorf("%s: LastUserText = %q, want %q", tc.name, got, tc.user)
		}
		var ids []string
		for _, c := range r.Results() {
			ids = append(ids, c.ToolCallID)
		}
		if len(ids) != len(tc.results) || (len(ids) > 0 && ids[0] != tc.results[0] || len(ids) > 1 && ids[1] != tc.results[1]) {
			t.Errorf("%s: Results = %q, want %q", tc.name, ids, tc.results)
		}
	}
}
