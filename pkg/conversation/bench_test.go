package conversation_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// BenchmarkBuild measures one step's model input: a 200-message history and
// a turn of 10 steps with 3 tool calls each, replayed and rendered.
func BenchmarkBuild(b *testing.B) {
	var hist []conversation.Message
	for i := range 100 {
		id := fmt.Sprintf("h%d", i)
		hist = append(hist,
			conversation.Message{Role: conversation.Assistant, Content: []conversation.Content{{Type: conversation.ToolCall, ToolCallID: id, ToolName: "t", Input: json.RawMessage(`{}`)}}},
			conversation.Message{Role: conversation.ToolRole, Content: []conversation.Content{{Type: conversation.ToolResult, ToolCallID: id, Output: json.RawMessage(`"ok"`)}}})
	}
	var ps []parts.Part
	for s := range 10 {
		ps = append(ps, parts.Part{Type: parts.StartStep}, parts.Part{Type: parts.TextStart, ID: "t"},
			parts.Part{Type: parts.TextDelta, ID: "t", Delta: "calling"}, parts.Part{Type: parts.TextEnd, ID: "t"})
		for c := range 3 {
			ps = append(ps, parts.Part{Type: parts.ToolInputAvailable, ToolCallID: fmt.Sprintf("c%d_%d", s, c), ToolName: "t", Input: json.RawMessage(`{"a":1}`)})
		}
		ps = append(ps, parts.Part{Type: parts.FinishStep})
		for c := range 3 {
			ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: fmt.Sprintf("c%d_%d", s, c), Output: json.RawMessage(`"ok"`)})
		}
	}
	user := []reducer.Message{{ID: "m", Text: "go"}}
	b.ReportAllocs()
	for b.Loop() {
		_ = conversation.Build(hist, user, conversation.Replay(ps))
	}
}
