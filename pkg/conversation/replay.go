package conversation

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/baton-run/baton/pkg/parts"
	"github.com/baton-run/baton/pkg/reducer"
)

// Call is a tool call of a completed step and what became of it.
type Call struct {
	// ID is baton's id for the call, unique within the session: approvals,
	// executions, idempotency keys and results are keyed by it.
	ID string
	// ProviderID is the id the provider gave the call, empty if none. The
	// model input carries it (see Build) unless it is not unique.
	ProviderID string
	Name       string
	Input      json.RawMessage
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

// callMeta is the providerMetadata of a tool-input-available part.
type callMeta struct {
	Baton struct {
		ProviderCallID string `json:"providerCallId"`
	} `json:"baton"`
}

// CallMetadata encodes the id a provider gave a tool call as
// providerMetadata, or returns nil when it gave none.
func CallMetadata(providerID string) json.RawMessage {
	if providerID == "" {
		return nil
	}
	var m callMeta
	m.Baton.ProviderCallID = providerID
	b, _ := json.Marshal(m) // plain struct: cannot fail
	return b
}

// providerID reads a tool-input-available part's provider id. A part with
// no such metadata (a call the provider gave no id, or a stream written
// before baton minted its own ids) is known to the provider by its
// toolCallId.
func providerID(p parts.Part) string {
	var m callMeta
	if len(p.ProviderMetadata) > 0 && json.Unmarshal(p.ProviderMetadata, &m) == nil && m.Baton.ProviderCallID != "" {
		return m.Baton.ProviderCallID
	}
	return p.ToolCallID
}

// Replay folds a turn's stream parts into its completed steps. Parts of a
// step that has no finish-step are dropped. Tool results, approvals and
// answers are matched to calls by tool call id wherever they appear.
func Replay(ps []parts.Part) Turn {
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
	for _, p := range ps {
		switch p.Type {
		case parts.StartStep:
			// A step still open here was cut short; it is dropped.
			open = &Step{}
			clear(blocks)
			builders = builders[:0]
		case parts.DataAbandoned:
			open = nil
		case parts.TextStart, parts.ReasoningStart:
			if open == nil {
				continue
			}
			typ := Text
			if p.Type == parts.ReasoningStart {
				typ = Reasoning
			}
			blocks[p.ID] = len(open.Content)
			open.Content = append(open.Content, Content{Type: typ})
			builders = append(builders, &strings.Builder{})
		case parts.TextDelta, parts.ReasoningDelta:
			if open == nil {
				continue
			}
			if i, ok := blocks[p.ID]; ok {
				builders[i].WriteString(p.Delta)
			}
		case parts.ReasoningEnd:
			if open == nil || len(p.ProviderMetadata) == 0 {
				continue
			}
			var m reasoningMeta
			if i, ok := blocks[p.ID]; ok && json.Unmarshal(p.ProviderMetadata, &m) == nil {
				open.Content[i].Signature = m.Baton.Signature
			}
		case parts.ToolInputAvailable:
			if open == nil {
				continue
			}
			c := &Call{ID: p.ToolCallID, ProviderID: providerID(p), Name: p.ToolName, Input: p.Input}
			open.Calls = append(open.Calls, c)
			open.Content = append(open.Content, Content{Type: ToolCall, ToolCallID: c.ID, ToolName: c.Name, Input: c.Input})
			builders = append(builders, nil)
		case parts.MessageMetadata:
			if open == nil {
				continue
			}
			var m stepMeta
			if json.Unmarshal(p.MessageMetadata, &m) == nil {
				open.Usage, open.Finish = m.Usage, m.FinishReason
			}
		case parts.FinishStep:
			if open == nil {
				continue
			}
			closeBlocks()
			for _, c := range open.Calls {
				calls[c.ID] = c
			}
			t.Steps = append(t.Steps, open)
			open = nil
		case parts.ToolApprovalRequest:
			if c, ok := calls[p.ToolCallID]; ok {
				c.ApprovalID = p.ApprovalID
			}
		case parts.ToolApprovalResponse:
			for _, c := range calls {
				if c.ApprovalID == p.ApprovalID {
					c.Answered = true
				}
			}
		case parts.ToolOutputAvailable:
			if c, ok := calls[p.ToolCallID]; ok {
				c.Result = &Content{Type: ToolResult, ToolCallID: c.ID, ToolName: c.Name, Output: p.Output}
			}
		case parts.ToolOutputError, parts.ToolOutputDenied:
			if c, ok := calls[p.ToolCallID]; ok {
				text := p.ErrorText
				if p.Type == parts.ToolOutputDenied {
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
// message with no content is left out. Tool calls and results carry each
// call's wire id; see Build.
func (t Turn) Messages() []Message { return t.messages(nil) }

// messages renders the steps with wire ids unique among themselves and
// among the ids already in history.
func (t Turn) messages(history []Message) []Message {
	wire := t.wireIDs(history)
	var out []Message
	for _, s := range t.Steps {
		if len(s.Content) > 0 {
			content := slices.Clone(s.Content)
			k := 0
			for i := range content {
				if content[i].Type == ToolCall && k < len(s.Calls) {
					content[i].ToolCallID = wire[s.Calls[k]]
					k++
				}
			}
			out = append(out, Message{Role: Assistant, Content: content})
		}
		var results []Content
		for _, c := range s.Calls {
			if c.Result != nil {
				r := *c.Result
				r.ToolCallID = wire[c]
				results = append(results, r)
			}
		}
		if len(results) > 0 {
			out = append(out, Message{Role: ToolRole, Content: results})
		}
	}
	return out
}

// wireIDs decides the id the provider sees for each call of the turn: the
// id it gave the call, unless that is empty, already used in history or by
// an earlier call of the turn, or another call's baton id; then baton's id,
// which is unique in the session. So every result pairs with its own call
// on the wire, whatever ids the provider sent.
func (t Turn) wireIDs(history []Message) map[*Call]string {
	n := 0
	for _, s := range t.Steps {
		n += len(s.Calls)
	}
	if n == 0 {
		return nil
	}
	used := map[string]bool{}
	for _, m := range history {
		for _, c := range m.Content {
			if c.Type == ToolCall {
				used[c.ToolCallID] = true
			}
		}
	}
	baton := make(map[string]bool, n)
	for _, s := range t.Steps {
		for _, c := range s.Calls {
			baton[c.ID] = true
		}
	}
	wire := make(map[*Call]string, n)
	for _, s := range t.Steps {
		for _, c := range s.Calls {
			id := c.ProviderID
			if id == "" || used[id] || (id != c.ID && baton[id]) {
				id = c.ID
			}
			used[id] = true
			wire[c] = id
		}
	}
	return wire
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
// user message, and its completed steps. A tool call and its result carry
// the call's wire id: the provider's id for it when that is unique in the
// input, else baton's id.
func Build(history []Message, user []reducer.Message, t Turn) []Message {
	out := make([]Message, 0, len(history)+1+2*len(t.Steps))
	out = append(out, history...)
	out = append(out, UserMessage(user))
	return append(out, t.messages(history)...)
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
