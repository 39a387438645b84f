package chat

import (
	"encoding/json"
	"testing"

	"github.com/baton-run/baton/internal/parts"
)

// TestReply folds a turn with a step cut short and redone, a denied call
// and step metadata, per major.
func TestReply(t *testing.T) {
	t.Parallel()
	no := false
	ps := []parts.Part{
		{Type: parts.Start, MessageID: "turn_1"},
		{Type: parts.StartStep},
		{Type: parts.TextStart, ID: "s0-b0"},
		{Type: parts.TextDelta, ID: "s0-b0", Delta: "cut "},
		{Type: parts.DataAbandoned, Data: json.RawMessage(`{}`)},
		{Type: parts.StartStep},
		{Type: parts.ReasoningStart, ID: "s0-b0"},
		{Type: parts.ReasoningDelta, ID: "s0-b0", Delta: "think"},
		{Type: parts.ReasoningEnd, ID: "s0-b0"},
		{Type: parts.TextStart, ID: "s0-b1"},
		{Type: parts.TextDelta, ID: "s0-b1", Delta: "Hello "},
		{Type: parts.TextDelta, ID: "s0-b1", Delta: "world"},
		{Type: parts.TextEnd, ID: "s0-b1"},
		{Type: parts.ToolInputAvailable, ToolCallID: "tc_1", ToolName: "send_email", Input: json.RawMessage(`{"to":"x"}`)},
		{Type: parts.MessageMetadata, MessageMetadata: json.RawMessage(`{"usage":{"in":1},"finishReason":"tool-calls"}`)},
		{Type: parts.FinishStep},
		{Type: parts.ToolApprovalRequest, ToolCallID: "tc_1", ApprovalID: "ap_1"},
		{Type: parts.DataSuspended, Data: json.RawMessage(`{"cause":"approval"}`)},
		{Type: parts.ToolApprovalResponse, ApprovalID: "ap_1", Approved: &no, Reason: "no"},
		{Type: parts.ToolOutputDenied, ToolCallID: "tc_1"},
		{Type: parts.MessageMetadata, MessageMetadata: json.RawMessage(`{"usage":{"out":2}}`)},
		{Type: parts.Finish, FinishReason: "stop"},
	}
	for _, tc := range []struct {
		v     Version
		state string
	}{{V5, "output-error"}, {V6, "output-denied"}, {V7, "output-denied"}} {
		m := Reply("turn_1", ps, tc.v)
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

// TestReplyDataParts: a tool's data parts of one type and id fold into one
// part holding the latest data, as the AI SDK reconciles them; parts
// without an id each stay; transient parts are left out; and the live
// stream sends a data part with only the AI SDK's fields.
func TestReplyDataParts(t *testing.T) {
	t.Parallel()
	ps := []parts.Part{
		{Type: parts.StartStep},
		{Type: parts.ToolInputAvailable, ToolCallID: "tc_1", ToolName: "scan", Input: json.RawMessage(`{}`)},
		{Type: parts.FinishStep},
		{Type: "data-progress", ID: "scan", ToolCallID: "tc_1", Data: json.RawMessage(`{"done":1}`)},
		{Type: "data-note", ToolCallID: "tc_1", Data: json.RawMessage(`"a"`)},
		{Type: "data-progress", ID: "scan", ToolCallID: "tc_1", Data: json.RawMessage(`{"done":2}`)},
		{Type: "data-note", ToolCallID: "tc_1", Data: json.RawMessage(`"b"`)},
		{Type: "data-found", ToolCallID: "tc_1", Data: json.RawMessage(`"x"`), Transient: true},
		{Type: parts.ToolOutputAvailable, ToolCallID: "tc_1", Output: json.RawMessage(`"ok"`)},
	}
	msg := Reply("turn_1", ps, V6)
	var got []string
	for _, p := range msg.Parts {
		if len(p.Type) > 5 && p.Type[:5] == "data-" {
			got = append(got, p.Type+"#"+p.ID+"="+string(p.Data))
		}
	}
	want := []string{`data-progress#scan={"done":2}`, `data-note#="a"`, `data-note#="b"`}
	if len(got) != len(want) {
		t.Fatalf("data parts %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("data parts %q, want %q", got, want)
		}
	}
	for _, v := range []Version{V5, V6, V7} {
		p, ok := v.Map(ps[3])
		b, _ := json.Marshal(p)
		if !ok || string(b) != `{"type":"data-progress","id":"scan","data":{"done":1}}` {
			t.Errorf("major %v sends %s, want the AI SDK's data chunk", v, b)
		}
	}
}
