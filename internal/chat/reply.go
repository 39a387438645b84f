package chat

import (
	"bytes"
	"encoding/json"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
)

// Reply folds a turn's stream parts into the assistant message an AI SDK
// client of major v builds from the same stream (its
// processMessageStream): text and reasoning parts, step-start, one tool
// part per call carrying its state (input-available, approval-requested,
// approval-responded, output-available, output-error, output-denied), and
// data parts, with message-metadata merged into Metadata. Each part is
// first mapped as the stream maps it for v, so a major-5 reply has no
// approval states and shows a denial as output-error. Majors 6 and 7 see a
// recorded answer as approval-responded until the call's result. Unlike a
// live client, the reply leaves out a step cut short and redone (the parts
// before a data-abandoned back to its step-start), transient data parts,
// and error parts.
func Reply(turn string, ps []parts.Part, v Version) api.ChatMessage {
	f := folder{msg: api.ChatMessage{ID: turn, Role: "assistant", Parts: []api.ChatPart{}}, blocks: map[string]int{}, step: -1}
	for _, p := range ps {
		if p.Type == parts.ToolApprovalResponse && v != V5 {
			f.answer(p) // v6 lacks the chunk but has the state
			continue
		}
		if p, ok := v.Map(p); ok {
			f.add(p)
		}
	}
	return f.msg
}

type folder struct {
	msg    api.ChatMessage
	blocks map[string]int // text or reasoning block id → part index
	step   int            // index of the latest step-start part
}

func (f *folder) add(p parts.Part) {
	f.msg.Metadata = mergeJSON(f.msg.Metadata, p.MessageMetadata)
	switch p.Type {
	case parts.StartStep:
		f.step = len(f.msg.Parts)
		f.push(api.ChatPart{Type: "step-start"})
	case parts.TextStart, parts.ReasoningStart:
		kind := "text"
		if p.Type == parts.ReasoningStart {
			kind = "reasoning"
		}
		text := ""
		f.blocks[kind+"/"+p.ID] = len(f.msg.Parts)
		f.push(api.ChatPart{Type: kind, Text: &text, State: "streaming", ProviderMetadata: p.ProviderMetadata})
	case parts.TextDelta, parts.ReasoningDelta, parts.TextEnd, parts.ReasoningEnd:
		f.block(p)
	case parts.ToolInputAvailable:
		t := f.tool(p.ToolCallID)
		if t == nil {
			f.push(api.ChatPart{Type: "tool-" + p.ToolName, ToolCallID: p.ToolCallID})
			t = &f.msg.Parts[len(f.msg.Parts)-1]
		}
		t.State, t.Input, t.CallProviderMetadata = "input-available", p.Input, p.ProviderMetadata
	case parts.ToolApprovalRequest:
		if t := f.tool(p.ToolCallID); t != nil {
			t.State, t.Approval = "approval-requested", &api.UIApproval{ID: p.ApprovalID}
		}
	case parts.ToolOutputAvailable:
		if t := f.tool(p.ToolCallID); t != nil {
			t.State, t.Output = "output-available", p.Output
		}
	case parts.ToolOutputError:
		if t := f.tool(p.ToolCallID); t != nil {
			t.State, t.ErrorText = "output-error", p.ErrorText
		}
	case parts.ToolOutputDenied:
		if t := f.tool(p.ToolCallID); t != nil {
			t.State = "output-denied"
		}
	case parts.DataAbandoned:
		f.retract()
	case parts.DataGuardrail:
		var d conversation.GuardrailData
		if json.Unmarshal(p.Data, &d) == nil && d.Discarded {
			f.retract()
		}
		f.data(p)
	default:
		if p.Type.IsData() && !p.Transient {
			f.data(p)
		}
	}
}

// retract drops the open step's parts: a step cut short, or one a
// guardrail discarded.
func (f *folder) retract() {
	if f.step >= 0 {
		f.msg.Parts = f.msg.Parts[:f.step]
		f.step = -1
	}
}

// data adds a data part, or, as the AI SDK reconciles them, updates the
// earlier one of the same type and id.
func (f *folder) data(p parts.Part) {
	if p.ID != "" {
		for i := range f.msg.Parts {
			if d := &f.msg.Parts[i]; d.Type == string(p.Type) && d.ID == p.ID {
				d.Data = p.Data
				return
			}
		}
	}
	f.push(api.ChatPart{Type: string(p.Type), ID: p.ID, Data: p.Data})
}

func (f *folder) push(p api.ChatPart) { f.msg.Parts = append(f.msg.Parts, p) }

// block adds a delta to, or ends, its text or reasoning part.
func (f *folder) block(p parts.Part) {
	kind := "text"
	if p.Type == parts.ReasoningDelta || p.Type == parts.ReasoningEnd {
		kind = "reasoning"
	}
	i, ok := f.blocks[kind+"/"+p.ID]
	if !ok || i >= len(f.msg.Parts) {
		return
	}
	b := &f.msg.Parts[i]
	switch p.Type {
	case parts.TextDelta, parts.ReasoningDelta:
		text := *b.Text + p.Delta
		b.Text = &text
	default:
		b.State = "done"
	}
	if len(p.ProviderMetadata) > 0 {
		b.ProviderMetadata = p.ProviderMetadata
	}
}

// answer records an approval answer on its tool part.
func (f *folder) answer(p parts.Part) {
	for i := range f.msg.Parts {
		t := &f.msg.Parts[i]
		if t.Approval != nil && t.Approval.ID == p.ApprovalID {
			t.Approval = &api.UIApproval{ID: p.ApprovalID, Approved: p.Approved, Reason: p.Reason}
			if t.State == "approval-requested" {
				t.State = "approval-responded"
			}
		}
	}
}

// tool returns the tool part of call id, or nil.
func (f *folder) tool(id string) *api.ChatPart {
	for i := range f.msg.Parts {
		if t := &f.msg.Parts[i]; t.ToolCallID == id && id != "" {
			return t
		}
	}
	return nil
}

// mergeJSON merges object patch into base as the AI SDK merges message
// metadata: objects key by key, recursively; anything else replaced.
func mergeJSON(base, patch json.RawMessage) json.RawMessage {
	if len(patch) == 0 {
		return base
	}
	var b, p map[string]json.RawMessage
	if json.Unmarshal(base, &b) != nil || json.Unmarshal(patch, &p) != nil || b == nil || p == nil {
		return patch
	}
	for k, pv := range p {
		if bv, ok := b[k]; ok && bytes.HasPrefix(bytes.TrimSpace(bv), []byte("{")) && bytes.HasPrefix(bytes.TrimSpace(pv), []byte("{")) {
			b[k] = mergeJSON(bv, pv)
		} else {
			b[k] = pv
		}
	}
	out, err := json.Marshal(b)
	if err != nil {
		return patch
	}
	return out
}
