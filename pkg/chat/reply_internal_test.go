package chat

import (
	"encoding/json"
	"testing"

	"github.com/baton-run/baton/pkg/streams"
)

// TestReply folds a turn with a step cut short and redone, a denied call
// and step metadata, per major.
func TestReply(t *testing.T) {
	no := false
	parts := []streams.Part{
		{Type: streams.Start, MessageID: "turn_1"},
		{Type: streams.StartStep},
		{Type: streams.TextStart, ID: "s0-b0"},
		{Type: streams.TextDelta, ID: "s0-b0", Delta: "cut "},
		{Type: streams.DataAbandoned, Data: json.RawMessage(`{}`)},
		{Type: streams.StartStep},
		{Type: streams.ReasoningStart, ID: "s0-b0"},
		{Type: streams.ReasoningDelta, ID: "s0-b0", Delta: "think"},
		{Type: streams.ReasoningEnd, ID: "s0-b0"},
		{Type: streams.TextStart, ID: "s0-b1"},
		{Type: streams.TextDelta, ID: "s0-b1", Delta: "Hello "},
		{Type: streams.TextDelta, ID: "s0-b1", Delta: "world"},
		{Type: streams.TextEnd, ID: "s0-b1"},
		{Type: streams.ToolInputAvailable, ToolCallID: "tc_1", ToolName: "send_email", Input: json.RawMessage(`{"to":"x"}`)},
		{Type: streams.MessageMetadata, MessageMetadata: json.RawMessage(`{"usage":{"in":1},"finishReason":"tool-calls"}`)},
		{Type: streams.FinishStep},
		{Type: streams.ToolApprovalRequest, ToolCallID: "tc_1", ApprovalID: "ap_1"},
		{Type: streams.DataSuspended, Data: json.RawMessage(`{"cause":"approval"}`)},
		{Type: streams.ToolApprovalResponse, ApprovalID: "ap_1", Approved: &no, Reason: "no"},
		{Type: streams.ToolOutputDenied, ToolCallID: "tc_1"},
		{Type: streams.MessageMetadata, MessageMetadata: json.RawMessage(`{"usage":{"out":2}}`)},
		{Type: streams.Finish, FinishReason: "stop"},
	}
	for _, tc := range []struct {
		v     Version
		state string
	}{{V5, "output-error"}, {V6, "output-denied"}, {V7, "output-denied"}} {
		m := Reply("turn_1", parts, tc.v)
		var kinds []string
		for _, p := range m.Parts {
			kinds = append(kinds, p.Type)
		}
		want := []string{"step-start", "reasoning", "text", "tool-send_email", "data-suspended"}
		if len(kinds) != len(want) {
			t.Fatalf("v%d: parts %v, want %v", tc.v, kinds, want)
		}
		for i := range want {
			if kinds[i] != want[i] {
				t.Fatalf("v%d: parts %v, want %v", tc.v, kinds, want)
			}
		}
		if text, reasoning := m.Parts[2], m.Parts[1]; *text.Text != "Hello world" || text.State != "done" || *reasoning.Text != "think" {
			t.Errorf("v%d: text %+v reasoning %+v", tc.v, text, reasoning)
		}
		tool := m.Parts[3]
		if tool.State != tc.state || string(tool.Input) != `{"to":"x"}` {
			t.Errorf("v%d: tool part %+v, want state %s", tc.v, tool, tc.state)
		}
		if denied := tool.Approval != nil && tool.Approval.Approved != nil && !*tool.Approval.Approved; denied != (tc.v != V5) {
			t.Errorf("v%d: approval %+v", tc.v, tool.Approval)
		}
		if got := string(m.Metadata); got != `{"finishReason":"tool-calls","usage":{"in":1,"out":2}}` {
			t.Errorf("v%d: metadata %s", tc.v, got)
		}
	}
}
