package conversation_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

func yes() *bool { b := true; return &b }

// stepWithCall is one complete model step calling a tool.
func stepWithCall(n, call string) []parts.Part {
	return []parts.Part{
		{Type: parts.StartStep},
		{Type: parts.ReasoningStart, ID: n + "r"},
		{Type: parts.ReasoningDelta, ID: n + "r", Delta: "think "},
		{Type: parts.ReasoningDelta, ID: n + "r", Delta: "hard"},
		{Type: parts.ReasoningEnd, ID: n + "r", ProviderMetadata: conversation.SignatureMetadata("sig-" + n)},
		{Type: parts.TextStart, ID: n + "t"},
		{Type: parts.TextDelta, ID: n + "t", Delta: "Checking "},
		{Type: parts.TextDelta, ID: n + "t", Delta: n},
		{Type: parts.TextEnd, ID: n + "t"},
		{Type: parts.ToolInputAvailable, ToolCallID: call, ToolName: "get_weather", Input: json.RawMessage(`{"city":"` + n + `"}`)},
		{Type: parts.MessageMetadata, MessageMetadata: conversation.StepMetadata(reducer.Usage{InputTokens: 10, OutputTokens: 2}, reducer.Usage{InputTokens: 10, OutputTokens: 2, Steps: 1}, "tool-calls")},
		{Type: parts.FinishStep},
	}
}

func TestReplayCompletedSteps(t *testing.T) {
	var ps []parts.Part
	ps = append(ps, parts.Part{Type: parts.Start, MessageID: "turn_1"})
	ps = append(ps, stepWithCall("A", "c1")...)
	ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "c1", Output: json.RawMessage(`{"t":1}`)})
	ps = append(ps, stepWithCall("B", "c2")...)
	ps = append(ps,
		parts.Part{Type: parts.ToolApprovalRequest, ApprovalID: "ap1", ToolCallID: "c2"},
		parts.Part{Type: parts.DataSuspended},
		parts.Part{Type: parts.DataResumed},
		parts.Part{Type: parts.ToolApprovalResponse, ApprovalID: "ap1", Approved: yes()},
		parts.Part{Type: parts.ToolOutputDenied, ToolCallID: "c2"},
	)
	tr := conversation.Replay(ps)
	if len(tr.Steps) != 2 || tr.Abandoned {
		t.Fatalf("steps=%d abandoned=%v", len(tr.Steps), tr.Abandoned)
	}
	a := tr.Steps[0]
	if a.Content[0].Type != conversation.Reasoning || a.Content[0].Text != "think hard" || a.Content[0].Signature != "sig-A" {
		t.Fatalf("reasoning block = %+v", a.Content[0])
	}
	if a.Content[1].Text != "Checking A" || a.Content[2].Type != conversation.ToolCall {
		t.Fatalf("content = %+v", a.Content)
	}
	if c := tr.Steps[1].Calls[0]; c.ApprovalID != "ap1" || !c.Answered || c.Result == nil || !c.Result.IsError {
		t.Fatalf("approved-then-denied call = %+v", c)
	}
	if len(tr.Pending()) != 0 {
		t.Fatalf("pending = %v", tr.Pending())
	}
	if u := tr.Usage(); u.InputTokens != 20 || u.OutputTokens != 4 || u.Steps != 2 {
		t.Fatalf("usage = %+v", u)
	}
	msgs := tr.Messages()
	roles := ""
	for _, m := range msgs {
		roles += string(m.Role) + " "
	}
	if roles != "assistant tool assistant tool " {
		t.Fatalf("roles = %q", roles)
	}
}

func TestReplayDropsTrailingPartialStep(t *testing.T) {
	ps := stepWithCall("A", "c1")
	ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "c1", Output: json.RawMessage(`1`)})
	ps = append(ps, stepWithCall("B", "c2")[:7]...) // no finish-step
	tr := conversation.Replay(ps)
	if len(tr.Steps) != 1 || !tr.Abandoned {
		t.Fatalf("steps=%d abandoned=%v, want 1 and true", len(tr.Steps), tr.Abandoned)
	}
	// A new start-step after the partial one: the partial is dropped, the
	// new one kept.
	ps = append(ps, stepWithCall("C", "c3")...)
	tr = conversation.Replay(ps)
	if len(tr.Steps) != 2 || tr.Steps[1].Calls[0].ID != "c3" {
		t.Fatalf("steps = %d", len(tr.Steps))
	}
	// A partial step earlier in the stream is history, not a trailing
	// abandoned step: resumes after it must not mark it again.
	if tr.Abandoned {
		t.Fatal("a partial step followed by a complete one still reads as abandoned")
	}
	// A partial step the runner already marked abandoned is closed by the marker.
	marked := append(stepWithCall("D", "c4")[:5], parts.Part{Type: parts.DataAbandoned})
	if tr := conversation.Replay(marked); tr.Abandoned || len(tr.Steps) != 0 {
		t.Fatalf("marked partial step: abandoned=%v steps=%d", tr.Abandoned, len(tr.Steps))
	}
	if p := tr.Pending(); len(p) != 1 || p[0].ID != "c3" {
		t.Fatalf("pending = %+v", p)
	}
}

func TestBuildIsDeterministicAcrossChunking(t *testing.T) {
	ps := stepWithCall("A", "c1")
	ps = append(ps, parts.Part{Type: parts.ToolOutputError, ToolCallID: "c1", ErrorText: "boom"})
	// The same text, coalesced as a sink would.
	co := append([]parts.Part(nil), ps...)
	co = append(co[:6], append([]parts.Part{{Type: parts.TextDelta, ID: "At", Delta: "Checking A"}}, co[8:]...)...)
	user := []reducer.Message{{ID: "m1", Text: "hi"}}
	hist := []conversation.Message{{Role: conversation.User, Content: []conversation.Content{{Type: conversation.Text, Text: "earlier"}}}}
	a, _ := json.Marshal(conversation.Build(hist, user, conversation.Replay(ps)))
	b, _ := json.Marshal(conversation.Build(hist, user, conversation.Replay(co)))
	if !bytes.Equal(a, b) {
		t.Fatalf("chunking changed the model input:\n%s\n%s", a, b)
	}
	var msgs []conversation.Message
	if err := json.Unmarshal(a, &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 4 || msgs[1].Role != conversation.User || msgs[3].Content[0].Output == nil || !msgs[3].Content[0].IsError {
		t.Fatalf("messages = %s", a)
	}
}

func TestCloseResolvesDanglingCalls(t *testing.T) {
	tr := conversation.Replay(stepWithCall("A", "c1"))
	if len(tr.Pending()) != 1 {
		t.Fatal("want one pending call")
	}
	msgs := conversation.Close(nil, []reducer.Message{{ID: "m", Text: "x"}}, tr, "cancelled", nil)
	last := msgs[len(msgs)-1]
	if last.Role != conversation.ToolRole || last.Content[0].ToolCallID != "c1" || !bytes.Contains(last.Content[0].Output, []byte("cancelled")) ||
		!bytes.Contains(last.Content[0].Output, []byte("not run")) {
		t.Fatalf("last message = %+v", last)
	}
	// A side effect started and never answered may have happened: the
	// model is not told it did not run.
	tr = conversation.Replay(stepWithCall("A", "c1"))
	msgs = conversation.Close(nil, []reducer.Message{{ID: "m", Text: "x"}}, tr, "cancelled", map[string]bool{"c1": true})
	if out := msgs[len(msgs)-1].Content[0].Output; !bytes.Contains(out, []byte("may or may not have taken effect")) {
		t.Fatalf("started call's result = %s", out)
	}
}

// call is a tool-input-available part under baton's id, with the
// provider's id in its metadata.
func call(baton, provider string) parts.Part {
	return parts.Part{Type: parts.ToolInputAvailable, ToolCallID: baton, ToolName: "t", Input: json.RawMessage(`{}`),
		ProviderMetadata: conversation.CallMetadata(provider)}
}

func TestWireIDsAreUniqueInTheModelInput(t *testing.T) {
	step := func(calls ...parts.Part) []parts.Part {
		ps := append([]parts.Part{{Type: parts.StartStep}}, calls...)
		for _, c := range calls {
			ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: c.ToolCallID, Output: json.RawMessage(`"` + c.ToolCallID + `"`)})
		}
		return ps
	}
	var ps []parts.Part
	ps = append(ps, step(call("b0", "p"), call("b1", "p"), call("b2", ""))...)
	ps = append(ps, parts.Part{Type: parts.FinishStep})
	ps = append(ps, step(call("b3", "p"), call("b4", "h"), call("b5", "b0"), call("b6", "q"))...)
	ps = append(ps, parts.Part{Type: parts.FinishStep})
	// Older streams have no metadata: the toolCallId is both ids.
	ps = append(ps, step(parts.Part{Type: parts.ToolInputAvailable, ToolCallID: "old", ToolName: "t", Input: json.RawMessage(`{}`)})...)
	ps = append(ps, parts.Part{Type: parts.FinishStep})
	// Results stream after finish-step; move them there.
	var calls, rest []parts.Part
	for _, p := range ps {
		if p.Type == parts.ToolOutputAvailable {
			rest = append(rest, p)
			continue
		}
		calls = append(calls, p)
	}
	tr := conversation.Replay(append(calls, rest...))
	if p := tr.Pending(); len(p) != 0 {
		t.Fatalf("pending = %+v", p)
	}
	hist := []conversation.Message{{Role: conversation.Assistant, Content: []conversation.Content{{Type: conversation.ToolCall, ToolCallID: "h"}}}}
	msgs := conversation.Build(hist, []reducer.Message{{ID: "m", Text: "x"}}, tr)
	var gotCalls, gotResults []string
	for _, m := range msgs[2:] {
		for _, c := range m.Content {
			switch c.Type {
			case conversation.ToolCall:
				gotCalls = append(gotCalls, c.ToolCallID)
			case conversation.ToolResult:
				// Each result carries its own call's output (baton's id).
				gotResults = append(gotResults, c.ToolCallID+"="+string(c.Output))
			}
		}
	}
	// p is kept once; a repeat, an empty id, an id already in history and
	// another call's baton id give way to baton's id.
	want := []string{"p", "b1", "b2", "b3", "b4", "b5", "q", "old"}
	if strings.Join(gotCalls, ",") != strings.Join(want, ",") {
		t.Fatalf("wire ids = %v, want %v", gotCalls, want)
	}
	wantResults := []string{`p="b0"`, `b1="b1"`, `b2="b2"`, `b3="b3"`, `b4="b4"`, `b5="b5"`, `q="b6"`, `old="old"`}
	if strings.Join(gotResults, ",") != strings.Join(wantResults, ",") {
		t.Fatalf("results = %v, want %v", gotResults, wantResults)
	}
	// Calls keep baton's ids; rendering twice gives the same bytes.
	if c := tr.Steps[0].Calls[0]; c.ID != "b0" || c.ProviderID != "p" {
		t.Fatalf("call = %+v", c)
	}
	a, _ := json.Marshal(msgs)
	b, _ := json.Marshal(conversation.Build(hist, []reducer.Message{{ID: "m", Text: "x"}}, tr))
	if !bytes.Equal(a, b) {
		t.Fatal("two renderings differ")
	}
}

// TestTimedStepMetadata: a step's metadata carries when its model call
// began and finished, the span of the tool runs before it and when the
// checkpoint before it began, and Untimed drops exactly those times.
func TestTimedStepMetadata(t *testing.T) {
	u := reducer.Usage{InputTokens: 10, OutputTokens: 2}
	ms := func(n int64) time.Time { return time.UnixMilli(1_700_000_000_000 + n) }
	timed := conversation.TimedStepMetadata(u, u, "stop", conversation.StepTimes{
		Began: ms(1000), Ended: ms(1500), ToolsBegan: ms(100), ToolsEnded: ms(700), Checkpoint: ms(800)})
	var m struct{ StartedAt, FinishedAt, ToolsStartedAt, ToolsFinishedAt, CheckpointAt int64 }
	if err := json.Unmarshal(timed, &m); err != nil || m.StartedAt != ms(1000).UnixMilli() || m.FinishedAt != ms(1500).UnixMilli() ||
		m.ToolsStartedAt != ms(100).UnixMilli() || m.ToolsFinishedAt != ms(700).UnixMilli() || m.CheckpointAt != ms(800).UnixMilli() {
		t.Fatalf("timed metadata %s: %+v, %v", timed, m, err)
	}
	if got, want := string(conversation.Untimed(timed)), string(conversation.StepMetadata(u, u, "stop")); got != want {
		t.Fatalf("Untimed = %s, want %s", got, want)
	}
	if tu, ok := conversation.TurnUsage(parts.Part{Type: parts.MessageMetadata, MessageMetadata: timed}); !ok || tu.InputTokens != 10 {
		t.Fatalf("TurnUsage of timed metadata = %+v, %v", tu, ok)
	}
}
