package test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/parts"
)

// script is a scripted model's file, as far as the tests read it.
type script struct {
	Steps []struct {
		Reasoning string `json:"reasoning"`
		Text      string `json:"text"`
		ToolCalls []struct {
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"toolCalls"`
	} `json:"steps"`
}

func loadScript(t *testing.T, path string) script {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s script
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

func (s script) calls() []string {
	var out []string
	for _, st := range s.Steps {
		for _, c := range st.ToolCalls {
			out = append(out, c.Name)
		}
	}
	return out
}

func countParts(ps []parts.Part, typ parts.Type) int {
	n := 0
	for _, p := range ps {
		if p.Type == typ {
			n++
		}
	}
	return n
}

// blocks returns the text of each text (or reasoning) block, in order.
func blocks(ps []parts.Part, start, delta parts.Type) []string {
	var order []string
	text := map[string]*strings.Builder{}
	for _, p := range ps {
		switch p.Type {
		case start:
			if _, dup := text[p.ID]; dup {
				order = append(order, "<block "+p.ID+" started twice>")
				continue
			}
			text[p.ID] = &strings.Builder{}
			order = append(order, p.ID)
		case delta:
			if b, ok := text[p.ID]; ok {
				b.WriteString(p.Delta)
			}
		}
	}
	out := make([]string, len(order))
	for i, id := range order {
		if b, ok := text[id]; ok {
			out[i] = b.String()
		} else {
			out[i] = id
		}
	}
	return out
}

// splitSteps separates a stream's model steps from the rest. A step runs
// from start-step to finish-step; one that a marker (data-abandoned,
// -suspended, -resumed) or another start-step interrupts is a partial step,
// live-flushed before its invocation was cut short, and is redone later.
// It returns the parts of the completed steps, in order, the number of
// partial steps, and the parts outside any step.
func splitSteps(ps []parts.Part) (completed [][]parts.Part, partial int, outside []parts.Part) {
	var cur []parts.Part
	in := false
	for _, p := range ps {
		switch {
		case p.Type == parts.StartStep:
			if in {
				partial++
			}
			cur, in = []parts.Part{p}, true
		case p.Type == parts.FinishStep && in:
			completed = append(completed, append(cur, p))
			cur, in = nil, false
		case p.Marker() && in:
			partial++
			cur, in = nil, false
			outside = append(outside, p)
		case in:
			cur = append(cur, p)
		default:
			outside = append(outside, p)
		}
	}
	if in {
		partial++
	}
	return completed, partial, outside
}

// outcome is what the test expects of the approval in a transcript.
type outcome struct {
	approved bool
	reason   string
}

// checkTranscript asserts that a closed stream holds the whole scripted turn
// exactly once: every step (start-step … finish-step), its reasoning and text
// blocks in order, every tool call with exactly one result, the approval
// request and the operator's response, and a final finish.
func checkTranscript(t *testing.T, ps []parts.Part, sc script, ap outcome) {
	t.Helper()
	if len(ps) == 0 {
		t.Fatal("empty stream")
	}
	if ps[0].Type != parts.Start {
		t.Errorf("first part %s, want start", ps[0].Type)
	}
	if last := ps[len(ps)-1]; last.Type != parts.Finish || last.FinishReason != "stop" {
		t.Errorf("last part %+v, want finish(stop)", last)
	}
	if n := countParts(ps, parts.Finish); n != 1 {
		t.Errorf("%d finish parts, want 1", n)
	}
	completed, partial, _ := splitSteps(ps)
	steps := len(sc.Steps)
	if got := len(completed); got != steps {
		t.Errorf("%d completed steps (start-step … finish-step), want %d (the script's steps): a step was lost or repeated", got, steps)
	}
	if got := countParts(ps, parts.FinishStep); got != steps {
		t.Errorf("%d finish-step parts, want %d", got, steps)
	}
	// A partial step is marked abandoned, once.
	if got := countParts(ps, parts.DataAbandoned); got != partial {
		t.Errorf("%d partial steps but %d data-abandoned markers: %s", partial, got, outline(ps))
	}
	var inSteps []parts.Part
	for _, st := range completed {
		inSteps = append(inSteps, st...)
	}

	var wantText, wantReasoning []string
	for _, st := range sc.Steps {
		if st.Text != "" {
			wantText = append(wantText, st.Text)
		}
		if st.Reasoning != "" {
			wantReasoning = append(wantReasoning, st.Reasoning)
		}
	}
	if got := blocks(inSteps, parts.TextStart, parts.TextDelta); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", wantText) {
		t.Errorf("text blocks\n got %q\nwant %q", got, wantText)
	}
	if got := blocks(inSteps, parts.ReasoningStart, parts.ReasoningDelta); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", wantReasoning) {
		t.Errorf("reasoning blocks\n got %q\nwant %q", got, wantReasoning)
	}

	// Tool calls, in script order, each with exactly one result.
	var names []string
	results := map[string][]parts.Part{}
	callName := map[string]string{}
	// Calls of partial steps are not counted: the redone step makes them
	// again, and only completed steps' calls run.
	for _, p := range inSteps {
		if p.Type == parts.ToolInputAvailable {
			if _, dup := callName[p.ToolCallID]; dup {
				t.Errorf("tool call %s made twice", p.ToolCallID)
			}
			callName[p.ToolCallID] = p.ToolName
			names = append(names, p.ToolName)
		}
	}
	for _, p := range ps {
		switch p.Type {
		case parts.ToolOutputAvailable, parts.ToolOutputError, parts.ToolOutputDenied:
			results[p.ToolCallID] = append(results[p.ToolCallID], p)
		}
	}
	if want := sc.calls(); fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("tool calls %v, want %v", names, want)
	}
	for id, name := range callName {
		rs := results[id]
		if len(rs) != 1 {
			t.Errorf("tool call %s (%s) has %d results, want 1: %+v", id, name, len(rs), rs)
			continue
		}
		r := rs[0]
		switch {
		case name == "send_email" && !ap.approved:
			if r.Type != parts.ToolOutputDenied {
				t.Errorf("denied send_email: result %+v, want tool-output-denied", r)
			}
		case r.Type != parts.ToolOutputAvailable:
			t.Errorf("%s: result %+v, want tool-output-available", name, r)
		case name == "send_email" && !strings.Contains(string(r.Output), `"sent":true`):
			t.Errorf("send_email output %s", r.Output)
		case name == "get_weather" && !strings.Contains(string(r.Output), `"sky":"clear"`):
			t.Errorf("get_weather output %s", r.Output)
		case name == "search_docs" && !strings.Contains(string(r.Output), `"hits"`):
			t.Errorf("search_docs output %s", r.Output)
		}
	}
	for id := range results {
		if _, ok := callName[id]; !ok {
			t.Errorf("result for unknown tool call %s", id)
		}
	}

	// The approval.
	var req, resp []parts.Part
	for _, p := range ps {
		switch p.Type {
		case parts.ToolApprovalRequest:
			req = append(req, p)
		case parts.ToolApprovalResponse:
			resp = append(resp, p)
		}
	}
	if len(req) != 1 || len(resp) != 1 {
		t.Fatalf("%d approval requests and %d responses, want 1 and 1", len(req), len(resp))
	}
	if callName[req[0].ToolCallID] != "send_email" || resp[0].ApprovalID != req[0].ApprovalID {
		t.Errorf("approval request %+v, response %+v", req[0], resp[0])
	}
	if resp[0].Approved == nil || *resp[0].Approved != ap.approved || resp[0].Reason != ap.reason {
		t.Errorf("approval response %+v, want approved=%v reason %q", resp[0], ap.approved, ap.reason)
	}
}

// outline renders a stream compactly: the part types, with deltas, blocks
// and tool parts folded, one step per line.
func outline(ps []parts.Part) string {
	var b strings.Builder
	for i, p := range ps {
		switch p.Type {
		case parts.TextDelta, parts.ReasoningDelta, parts.TextEnd, parts.ReasoningEnd, parts.MessageMetadata:
			continue
		case parts.StartStep:
			b.WriteString("\n  ")
		}
		fmt.Fprintf(&b, "%d:%s", i, p.Type)
		switch {
		case p.ToolCallID != "":
			fmt.Fprintf(&b, "(%s)", p.ToolCallID)
		case len(p.Data) > 0:
			fmt.Fprintf(&b, "%s", p.Data)
		}
		b.WriteString(" ")
	}
	return b.String()
}
