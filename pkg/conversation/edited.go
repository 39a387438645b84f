package conversation

import (
	"encoding/json"

	"github.com/baton-run/baton/internal/parts"
)

// An operator's edit of a call (reducer.Edit) is recorded in the stream
// as a data-edited part after the approval's response: from it on, the
// call's input is the edited one, in the model's next request and every
// rebuild of it, so the model sees what ran.

// editedData is the payload of a data-edited part.
type editedData struct {
	ToolCallID string          `json:"toolCallId"`
	Input      json.RawMessage `json:"input"`
	Original   json.RawMessage `json:"original,omitempty"`
	By         string          `json:"by,omitempty"`
}

// Edited returns the data-edited part recording that by replaced the input
// of call toolCallID (original) with input.
func Edited(toolCallID string, input, original json.RawMessage, by string) parts.Part {
	b, _ := json.Marshal(editedData{ToolCallID: toolCallID, Input: input, Original: original, By: by})
	return parts.Part{Type: parts.DataEdited, Data: b}
}

// edited folds an edit: the call and its tool-call block take the new
// input (as stored), and the call's step renders anew.
func (r *Replayer) edited(p parts.Part) {
	var d editedData
	if json.Unmarshal(p.Data, &d) != nil || len(d.Input) == 0 {
		return
	}
	c, ok := r.calls[d.ToolCallID]
	if !ok {
		return
	}
	c.Input = parts.Recorded(d.Input)
	i := r.stepOf[c]
	for j := range r.steps[i].Content {
		if b := &r.steps[i].Content[j]; b.Type == ToolCall && b.ToolCallID == c.ID {
			b.Input = c.Input
		}
	}
	r.stale = min(r.stale, i)
}
