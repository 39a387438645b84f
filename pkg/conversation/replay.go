package conversation

import (
	"encoding/json"
	"strings"

	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// Call is a tool call of a completed step and what became of it.
type Call struct {
	ID    string
	Name  string
	Input json.RawMessage
	// ApprovalID is set once an approval was requested for the call.
	ApprovalID string
	// Answered is set once the operator's answer reached the stream.
	Answered bool
	// Result is the tool-result content, nil while the call has none.
	Result *Content
}

// Step is one completed model step: the model's output and its tool calls.
type Step struct {
	Content []Content // reasoning, text and tool-call blocks, in stream order
	Calls   []*Call
	Usage   reducer.Usage
	Finish  string
}

// Turn is what a turn's stream holds so far.
type Turn struct {
	Steps []*Step
	// Abandoned reports that the stream ends in a step that never reached
	// finish-step; it is dropped and the resumed run redoes it.
	Abandoned bool
}

// stepMeta is the payload of a message-metadata part.
type stepMeta struct {
	Usage        reducer.Usage `json:"usage"`
	FinishReason string        `json:"finishReason,omitempty"`
}

// StepMetadata encodes the message-metadata payload the runner writes at
// the end of each model step.
func StepMetadata(u reducer.Usage, finish string) json.RawMessage {
	b, _ := json.Marshal(stepMeta{Usage: u, FinishReason: finish}) // plain struct: cannot fail
	return b
}

// reasoningMeta is the providerMetadata of a reasoning-end part.
type reasoningMeta struct {
	Baton struct {
		Signature string `json:"signature"`
	} `json:"baton"`
}

// SignatureMetadata encodes a reasoning signature as providerMetadata.
func SignatureMetadata(sig string) json.RawMessage {
	var m reasoningMeta
	m.Baton.Signature = sig
	b, _ := json.Marshal(m) // plain struct: cannot fail
	return b
}

// Replay folds a turn's stream parts into its completed steps. Parts of a
// step that has no finish-step are dropped. Tool results, approvals and
// answers are matched to calls by tool call id wherever they appear.
func Replay(parts []streams.Part) Turn {
	var t Turn
	var open *Step
	blocks := map[string]int{} // text/reasoning block id -> index in open.Content
	calls := map[string]*Call{}
	var builders []*strings.Builder // text of open.Content[i], nil for non-text

	closeBlocks := func() {
		for i, sb := range builders {
			if sb != nil {
				open.Content[i].Text = sb.String()
			}
		}
	}
	for _, p := range parts {
		switch p.Type {
		case streams.StartStep:
			// A step still open here was cut short; it is dropped.
			open = &Step{}
			clear(blocks)
			builders = builders[:0]
		case streams.DataAbandoned:
			open = nil
		case streams.TextStart, streams.ReasoningStart:
			if open == nil {
				continue
			}
			typ := Text
			if p.Type == streams.ReasoningStart {
				typ = Reasoning
			}
			blocks[p.ID] = len(open.Content)
			open.Content = append(open.Content, Content{Type: typ})
			builders = append(builders, &strings.Builder{})
		case streams.TextDelta, streams.ReasoningDelta:
			if open == nil {
				continue
			}
			if i, ok := blocks[p.ID]; ok {
				builders[i].WriteString(p.Delta)
			}
		case streams.ReasoningEnd:
			if open == nil || len(p.ProviderMetadata) == 0 {
				continue
			}
			var m reasoningMeta
			if i, ok := blocks[p.ID]; ok && json.Unmarshal(p.ProviderMetadata, &m) == nil {
				open.Content[i].Signature = m.Baton.Signature
			}
		case streams.ToolInputAvailable:
			if open == nil {
				continue
			}
			c := &Call{ID: p.ToolCallID, Name: p.ToolName, Input: p.Input}
			open.Calls = append(open.Calls, c)
			open.Content = append(open.Content, Content{Type: ToolCall, ToolCallID: c.ID, ToolName: c.Name, Input: c.Input})
			builders = append(builders, nil)
		case streams.MessageMetadata:
			if open == nil {
				continue
			}
			var m stepMeta
			if json.Unmarshal(p.MessageMetadata, &m) == nil {
				open.Usage, open.Finish = m.Usage, m.FinishReason
			}
		case streams.FinishStep:
			if open == nil {
				continue
			}
			closeBlocks()
			for _, c := range open.Calls {
				calls[c.ID] = c
			}
			t.Steps = append(t.Steps, open)
			open = nil
		case streams.ToolApprovalRequest:
			if c, ok := calls[p.ToolCallID]; ok {
				c.ApprovalID = p.ApprovalID
			}
		case streams.ToolApprovalResponse:
			for _, c := range calls {
				if c.ApprovalID == p.ApprovalID {
					c.Answered = true
				}
			}
		case streams.ToolOutputAvailable:
			if c, ok := calls[p.ToolCallID]; ok {
				c.Result = &Content{Type: ToolResult, ToolCallID: c.ID, ToolName: c.Name, Output: p.Output}
			}
		case streams.ToolOutputError, streams.ToolOutputDenied:
			if c, ok := calls[p.ToolCallID]; ok {
				text := p.ErrorText
				if p.Type == streams.ToolOutputDenied {
					text = DeniedText
				}
				out, _ := json.Marshal(text) // a string: cannot fail
				c.Result = &Content{Type: ToolResult, ToolCallID: c.ID, ToolName: c.Name, Output: out, IsError: true}
			}
		}
	}
	if open != nil {
		t.Abandoned = true
	}
	return t
}

// DeniedText is the tool result the model sees for a denied call.
const DeniedText = "The operator denied this tool call. Do not retry it; continue without it."

// Pending returns the calls that have no result yet, in call order.
func (t Turn) Pending() []*Call {
	var out []*Call
	for _, s := range t.Steps {
		for _, c := range s.Calls {
			if c.Result == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// Usage sums the usage of the completed steps.
func (t Turn) Usage() reducer.Usage {
	var u reducer.Usage
	for _, s := range t.Steps {
		u = u.Add(s.Usage)
		u.Steps++
	}
	return u
}

// Last returns the last completed step, or nil.
func (t Turn) Last() *Step {
	if len(t.Steps) == 0 {
		return nil
	}
	return t.Steps[len(t.Steps)-1]
}

// Messages renders the completed steps: each step's assistant message, then
// one tool message with the results it has, in call order. An assistant
// message with no content is left out.
func (t Turn) Messages() []Message {
	var out []Message
	for _, s := range t.Steps {
		if len(s.Content) > 0 {
			out = append(out, Message{Role: Assistant, Content: s.Content})
		}
		var results []Content
		for _, c := range s.Calls {
			if c.Result != nil {
				results = append(results, *c.Result)
			}
		}
		if len(results) > 0 {
			out = append(out, Message{Role: ToolRole, Content: results})
		}
	}
	return out
}

// UserMessage renders the messages a turn answers as one user message.
func UserMessage(msgs []reducer.Message) Message {
	m := Message{Role: User}
	for _, x := range msgs {
		m.Content = append(m.Content, Content{Type: Text, Text: x.Text})
	}
	return m
}

// Build returns the model input: the ended turns' history, the open turn's
// user message, and its completed steps.
func Build(history []Message, user []reducer.Message, t Turn) []Message {
	out := make([]Message, 0, len(history)+1+2*len(t.Steps))
	out = append(out, history...)
	out = append(out, UserMessage(user))
	return append(out, t.Messages()...)
}

// Unresolved is the result recorded for a call that never got one because
// its turn ended first.
func Unresolved(outcome string) json.RawMessage {
	out, _ := json.Marshal("The tool call was not run: the turn was " + outcome + ".") // a string: cannot fail
	return out
}

// Close renders a turn for the snapshot taken when it ends: like Build, but
// calls still without a result get an Unresolved one, so no call is left
// dangling in later turns' input.
func Close(history []Message, user []reducer.Message, t Turn, outcome string) []Message {
	for _, c := range t.Pending() {
		c.Result = &Content{Type: ToolResult, ToolCallID: c.ID, ToolName: c.Name, Output: Unresolved(outcome), IsError: true}
	}
	return Build(history, user, t)
}
