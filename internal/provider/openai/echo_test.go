package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-run/baton/pkg/conversation"
)

func TestEchoReasoningOnToolCalls(t *testing.T) {
	msgs := []conversation.Message{
		{Role: conversation.User, Content: []conversation.Content{{Type: conversation.Text, Text: "hi"}}},
		{Role: conversation.Assistant, Content: []conversation.Content{
			{Type: conversation.Reasoning, Text: "I should look it up."},
			{Type: conversation.ToolCall, ToolCallID: "c1", ToolName: "get_weather", Input: json.RawMessage(`{"city":"Oslo"}`)},
		}},
		{Role: conversation.ToolRole, Content: []conversation.Content{{Type: conversation.ToolResult, ToolCallID: "c1", Output: json.RawMessage(`{"t":1}`)}}},
	}
	for _, echo := range []bool{false, true} {
		out, err := Messages("", msgs, echo)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(string(b), `"reasoning_content":"I should look it up."`)
		if has != echo {
			t.Fatalf("echo=%v: reasoning_content sent=%v in %s", echo, has, b)
		}
	}
}
