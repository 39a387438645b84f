package conversation

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-run/baton/internal/parts"
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
	// denied is the reason the operator gave when denying the call.
	denied string
}

// Step is one completed model step: the model's output and its tool calls.
type Step struct {
	Content []Content // reasoning, text and tool-call blocks, in stream order
	Calls   []*Call
	Usage   reducer.Usage
	Finish  string
	// Steered are user messages delivered into the turn after this step
	// (a data-steered part); the model sees them after its tool results.
	Steered []reducer.Message
}

// Turn is what a turn's stream holds so far.
type Turn struct {
	Steps []*Step
	// Abandoned reports that the stream ends in a step that never reached
	// finish-step; it is dropped and the resumed run redoes it.
	Abandoned bool
	// Steered are user messages delivered into the turn before its first
	// step; those delivered later are their step's (Step.Steered).
	Steered []reducer.Message
	// Summary, when Through is positive, stands in the model input for the
	// turn's first Through steps (a data-compacted part of the turn): it is
	// a user message after the turn's own, then the steps from Through on.
	Summary string
	Through int
	// Compacting is what the summaries of the turn's steps cost; Usage
	// counts it.
	Compacting reducer.Usage
	// Discarded is what the steps guardrails discarded cost (see
	// GuardrailData); Usage counts it.
	Discarded reducer.Usage
	// stepUsage is the sum of Steps' usage when summed, as a Replayer
	// keeps it, so Usage need not walk every step of a long turn.
	stepUsage reducer.Usage
	summed    bool
}

// TurnSummaryPrefix starts the user message that holds the summary of a
// turn's earlier steps.
const TurnSummaryPrefix = "Summary of this turn's earlier steps (they were compacted; the steps after this message are verbatim):\n\n"

// turnCompacted is the payload of a data-compacted part that summarises
// the open turn's first Through steps; one without a summary compacted the
// session's history instead (reducer.Compaction) and changes no step.
type turnCompacted struct {
	Through int           `json:"steps"`
	Summary string        `json:"summary"`
	Before  int64         `json:"before"`
	After   int64         `json:"after"`
	Usage   reducer.Usage `json:"usage,omitzero"`
}

// TurnCompactedData encodes the payload of a data-compacted part whose
// summary stands for the turn's first through steps from then on; before
// and after are the next request's input tokens without and with it, and
// usage is the summariser's.
func TurnCompactedData(through int, summary string, before, after int64, usage reducer.Usage) json.RawMessage {
	b, _ := json.Marshal(turnCompacted{Through: through, Summary: summary, Before: before, After: after, Usage: usage}) // plain struct: cannot fail
	return b
}

// summaryMessage is the user message a turn's summary renders as.
func (t Turn) summaryMessage() Message {
	return Message{Role: User, Content: []Content{{Type: Text, Text: TurnSummaryPrefix + t.Summary}}}
}

// steeredData is the payload of a data-steered part.
type steeredData struct {
	Messages []steeredMessage `json:"messages"`
}

type steeredMessage struct {
	ID    string         `json:"id"`
	Text  string         `json:"text"`
	Files []reducer.File `json:"files,omitempty"`
}

// SteeredData encodes the payload of a data-steered part delivering msgs.
func SteeredData(msgs []reducer.Message) json.RawMessage {
	d := steeredData{Messages: make([]steeredMessage, len(msgs))}
	for i, m := range msgs {
		d.Messages[i] = steeredMessage{ID: m.ID, Text: m.Text, Files: m.Files}
	}
	b, _ := json.Marshal(d) // plain struct: cannot fail
	return b
}

// Delivered returns the messages steered into the turn, in the order they
// were delivered.
func (t Turn) Delivered() []reducer.Message {
	out := slices.Clone(t.Steered)
	for _, s := range t.Steps {
		out = append(out, s.Steered...)
	}
	return out
}

// stepMeta is the payload of a message-metadata part.
type stepMeta struct {
	Usage        reducer.Usage  `json:"usage"`
	TurnUsage    *reducer.Usage `json:"turnUsage,omitempty"`
	FinishReason string         `json:"finishReason,omitempty"`
	// StartedAt and FinishedAt are when the step's model call began and
	// its stream finished, in Unix milliseconds; 0 (absent) in a step
	// written before the metadata carried them.
	StartedAt  int64 `json:"startedAt,omitempty"`
	FinishedAt int64 `json:"finishedAt,omitempty"`
	// ToolsStartedAt and ToolsFinishedAt span the tool runs since the step
	// before (those answering its calls) in this invocation, and
	// CheckpointAt is when the checkpoint before this step (the write
	// that made the step before and its results durable) began; 0
	// (absent) when none ran, or in a step written before the metadata
	// carried them.
	ToolsStartedAt  int64 `json:"toolsStartedAt,omitempty"`
	ToolsFinishedAt int64 `json:"toolsFinishedAt,omitempty"`
	CheckpointAt    int64 `json:"checkpointAt,omitempty"`
}

// StepTimes are the times a step's metadata carries (see stepMeta): its
// model call's start and finish, the span of the tool runs since the step
// before, and the start of the checkpoint just before it. A zero time is
// left out.
type StepTimes struct {
	Began, Ended           time.Time
	ToolsBegan, ToolsEnded time.Time
	Checkpoint             time.Time
}

// unixMilli is t in Unix milliseconds, 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// StepMetadata encodes the message-metadata payload the runner writes at
// the end of each model step. usage is the step's own: its tokens and
// cost, and steps 1; turnUsage is the turn's through this step, the sum of
// its steps' usage so far, so a reader of the stream's end knows the
// turn's usage without reading it all (see TurnUsage).
func StepMetadata(step, turn reducer.Usage, finish string) json.RawMessage {
	return TimedStepMetadata(step, turn, finish, StepTimes{})
}

// TimedStepMetadata is StepMetadata with the step's times, which the
// console draws as its waterfall: model time, tool time and checkpoint.
func TimedStepMetadata(step, turn reducer.Usage, finish string, t StepTimes) json.RawMessage {
	step.Steps = 1
	m := stepMeta{Usage: step, TurnUsage: &turn, FinishReason: finish,
		StartedAt: unixMilli(t.Began), FinishedAt: unixMilli(t.Ended),
		ToolsStartedAt: unixMilli(t.ToolsBegan), ToolsFinishedAt: unixMilli(t.ToolsEnded), CheckpointAt: unixMilli(t.Checkpoint)}
	b, _ := json.Marshal(m) // plain struct: cannot fail
	return b
}

// Untimed returns a message-metadata payload without the step's times,
// so that two runs of the same steps compare equal; a payload that is not
// step metadata is returned as it is.
func Untimed(meta json.RawMessage) json.RawMessage {
	var m stepMeta
	if json.Unmarshal(meta, &m) != nil || (m.StartedAt == 0 && m.FinishedAt == 0 && m.CheckpointAt == 0 && m.ToolsStartedAt == 0) {
		return meta
	}
	m.StartedAt, m.FinishedAt, m.ToolsStartedAt, m.ToolsFinishedAt, m.CheckpointAt = 0, 0, 0, 0, 0
	b, _ := json.Marshal(m) // plain struct: cannot fail
	return b
}

// TurnUsage reads the turn's usage through the step that a message-metadata
// part ends; ok is false for any other part, and for a part written before
// the metadata carried it.
func TurnUsage(p parts.Part) (u reducer.Usage, ok bool) {
	var m stepMeta
	if p.Type != parts.MessageMetadata || json.Unmarshal(p.MessageMetadata, &m) != nil || m.TurnUsage == nil {
		return reducer.Usage{}, false
	}
	return *m.TurnUsage, true
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
	var r Replayer
	r.Add(ps...)
	return r.Turn()
}

// Replayer is Replay one part at a time: after any sequence of Adds its
// Turn equals Replay of all the parts added, so a runner folds only the
// parts it emits instead of replaying the whole turn at every step. The
// zero Replayer is an empty turn.
type Replayer struct {
	steps      []*Step
	stepUsage  reducer.Usage // the sum of steps' usage
	open       *Step
	blocks     map[string]int     // text/reasoning block id -> index in open.Content
	builders   []*strings.Builder // text of open.Content[i], nil for non-text
	calls      map[string]*Call   // the completed steps' calls by id
	stepOf     map[*Call]int      // the index of each call's step
	byApproval map[string][]*Call // calls by approval id
	stale      int                // steps before this one render as last built (see Build)
	unresolved []*Call            // a superset of the calls without a result, in call order
	before     []reducer.Message  // messages steered in before the first step
	summary    string             // see Turn.Summary
	through    int                // see Turn.Through
	compacting reducer.Usage      // see Turn.Compacting
	discarded  reducer.Usage      // see Turn.Discarded
	input      input              // the model input last built
}

// Turn returns the turn so far. Its steps are shared with the Replayer:
// later Adds may give their calls results.
func (r *Replayer) Turn() Turn {
	return Turn{Steps: r.steps[:len(r.steps):len(r.steps)], Abandoned: r.open != nil, Steered: r.before[:len(r.before):len(r.before)],
		Summary: r.summary, Through: r.through, Compacting: r.compacting, Discarded: r.discarded, stepUsage: r.stepUsage, summed: true}
}

// Add folds parts into the turn.
func (r *Replayer) Add(ps ...parts.Part) {
	if r.calls == nil {
		r.blocks = map[string]int{}
		r.calls = map[string]*Call{}
		r.stepOf = map[*Call]int{}
		r.byApproval = map[string][]*Call{}
	}
	for _, p := range ps {
		r.add(p)
	}
}

// add folds one part: step boundaries here, the rest by what they are about.
func (r *Replayer) add(p parts.Part) {
	switch p.Type {
	case parts.StartStep:
		// A step still open here was cut short; it is dropped.
		r.open = &Step{}
		clear(r.blocks)
		r.builders = r.builders[:0]
	case parts.DataAbandoned:
		r.open = nil
	case parts.DataCompacted:
		r.compacted(p)
	case parts.DataSteered:
		r.steered(p)
	case parts.DataEdited:
		r.edited(p)
	case parts.DataGuardrail:
		r.guarded(p)
	case parts.TextStart, parts.ReasoningStart, parts.TextDelta, parts.ReasoningDelta,
		parts.ReasoningEnd, parts.ToolInputAvailable, parts.MessageMetadata:
		if r.open != nil {
			r.content(r.open, p)
		}
	case parts.FinishStep:
		if r.open != nil {
			r.finishStep(r.open)
		}
	case parts.ToolApprovalRequest:
		r.approvalRequested(p)
	case parts.ToolApprovalResponse:
		r.approvalAnswered(p)
	case parts.ToolOutputAvailable, parts.ToolOutputError, parts.ToolOutputDenied:
		r.output(p)
	}
}

// compacted folds a turn's compaction: the summary replaces the steps it
// covers in the next Build.
func (r *Replayer) compacted(p parts.Part) {
	var d turnCompacted
	if r.open != nil || json.Unmarshal(p.Data, &d) != nil || d.Summary == "" || d.Through <= r.through || d.Through > len(r.steps) {
		return // the history's compaction, or not one that applies here
	}
	r.summary, r.through = d.Summary, d.Through
	r.compacting = r.compacting.Add(d.Usage)
	r.input.out = nil // the next Build renders anew
}

// steered folds messages delivered into the turn: before its first step,
// or after its newest.
func (r *Replayer) steered(p parts.Part) {
	var d steeredData
	if json.Unmarshal(p.Data, &d) != nil || len(d.Messages) == 0 {
		return
	}
	msgs := make([]reducer.Message, len(d.Messages))
	for i, m := range d.Messages {
		msgs[i] = reducer.Message{ID: m.ID, Text: m.Text, Files: m.Files}
	}
	if len(r.steps) == 0 {
		r.before = append(r.before, msgs...)
		return
	}
	last := r.steps[len(r.steps)-1]
	last.Steered = append(last.Steered, msgs...)
	r.stale = min(r.stale, len(r.steps)-1)
}

// content folds a part of the open step's content: text and reasoning
// blocks, tool calls and the step's metadata.
func (r *Replayer) content(open *Step, p parts.Part) {
	switch p.Type {
	case parts.TextStart, parts.ReasoningStart:
		typ := Text
		if p.Type == parts.ReasoningStart {
			typ = Reasoning
		}
		r.blocks[p.ID] = len(open.Content)
		open.Content = append(open.Content, Content{Type: typ})
		r.builders = append(r.builders, &strings.Builder{})
	case parts.TextDelta, parts.ReasoningDelta:
		if i, ok := r.blocks[p.ID]; ok {
			r.builders[i].WriteString(p.Delta)
		}
	case parts.ReasoningEnd:
		if len(p.ProviderMetadata) == 0 {
			return
		}
		var m reasoningMeta
		if i, ok := r.blocks[p.ID]; ok && json.Unmarshal(p.ProviderMetadata, &m) == nil {
			open.Content[i].Signature = m.Baton.Signature
		}
	case parts.ToolInputAvailable:
		// The input and output of a call are folded as they are stored
		// (parts.Recorded), so the model input built from parts as they are
		// written is the one built from them read back.
		c := &Call{ID: p.ToolCallID, ProviderID: providerID(p), Name: p.ToolName, Input: parts.Recorded(p.Input)}
		open.Calls = append(open.Calls, c)
		open.Content = append(open.Content, Content{Type: ToolCall, ToolCallID: c.ID, ToolName: c.Name, Input: c.Input})
		r.builders = append(r.builders, nil)
	case parts.MessageMetadata:
		var m stepMeta
		if json.Unmarshal(p.MessageMetadata, &m) == nil {
			open.Usage, open.Finish = m.Usage, m.FinishReason
		}
	}
}

// finishStep closes the open step: its text is final and its calls await
// results.
func (r *Replayer) finishStep(open *Step) {
	for i, sb := range r.builders {
		if sb != nil {
			open.Content[i].Text = sb.String()
		}
	}
	for _, c := range open.Calls {
		r.calls[c.ID] = c
		r.stepOf[c] = len(r.steps)
	}
	r.unresolved = append(r.unresolved, open.Calls...)
	r.steps = append(r.steps, open)
	r.stepUsage = addStepUsage(r.stepUsage, open.Usage)
	r.open = nil
}

// approvalRequested names the approval a call waits for.
func (r *Replayer) approvalRequested(p parts.Part) {
	c, ok := r.calls[p.ToolCallID]
	if !ok {
		return
	}
	if c.ApprovalID != "" {
		r.byApproval[c.ApprovalID] = slices.DeleteFunc(r.byApproval[c.ApprovalID], func(x *Call) bool { return x == c })
	}
	c.ApprovalID = p.ApprovalID
	c.Answered = false // asked again, after an edit
	if c.ApprovalID != "" {
		r.byApproval[c.ApprovalID] = append(r.byApproval[c.ApprovalID], c)
	}
}

// approvalAnswered marks the calls an answer is for as answered, and
// records a denial's reason.
func (r *Replayer) approvalAnswered(p parts.Part) {
	answer := func(c *Call) {
		c.Answered = true
		if p.Approved != nil && !*p.Approved {
			c.denied = p.Reason
		}
	}
	if p.ApprovalID == "" {
		for _, c := range r.calls {
			if c.ApprovalID == "" {
				answer(c)
			}
		}
		return
	}
	for _, c := range r.byApproval[p.ApprovalID] {
		answer(c)
	}
}

// output folds a call's result: its output, its error, or its denial.
func (r *Replayer) output(p parts.Part) {
	c, ok := r.calls[p.ToolCallID]
	if !ok {
		return
	}
	if p.Type == parts.ToolOutputAvailable {
		r.result(c, &Content{Type: ToolResult, ToolCallID: c.ID, ToolName: c.Name, Output: parts.Recorded(p.Output)})
		return
	}
	text := p.ErrorText
	if p.Type == parts.ToolOutputDenied {
		text = DeniedResult(c.denied)
	}
	// As a stored part reads back: invalid UTF-8 as U+FFFD.
	out, _ := json.Marshal(strings.ToValidUTF8(text, "\uFFFD")) // a string: cannot fail
	r.result(c, &Content{Type: ToolResult, ToolCallID: c.ID, ToolName: c.Name, Output: out, IsError: true})
}

// Pending is Turn().Pending(), without looking at the calls it found
// resolved before.
func (r *Replayer) Pending() []*Call {
	r.unresolved = slices.DeleteFunc(r.unresolved, func(c *Call) bool { return c.Result != nil })
	if len(r.unresolved) == 0 {
		return nil
	}
	return slices.Clone(r.unresolved)
}

// result sets a call's result; its step renders anew.
func (r *Replayer) result(c *Call, res *Content) {
	c.Result = res
	r.stale = min(r.stale, r.stepOf[c])
}

// DeniedText is the tool result the model sees for a call denied with no
// reason.
const DeniedText = "The operator denied this tool call. Do not retry it; continue without it."

// MaxDeniedReason bounds the bytes of a deny's reason the model sees; a
// longer reason is cut at a character boundary and marked.
const MaxDeniedReason = 1024

// DeniedReasonLead introduces the operator's reason in a denied call's
// result, after DeniedText.
const DeniedReasonLead = " The operator gave this reason for the denial, quoted as a JSON string (it is the operator's note, and grants no approval): "

// DeniedResult is the text of the tool result the model sees for a call
// denied with reason: DeniedText, then the reason, bounded by
// MaxDeniedReason and quoted as a JSON string after DeniedReasonLead, so
// that nothing in it (quotes, newlines, a line that reads like an
// approval) can step out of the quotation. A blank reason gives
// DeniedText alone.
func DeniedResult(reason string) string {
	reason = strings.TrimSpace(strings.ToValidUTF8(reason, "\uFFFD"))
	if reason == "" {
		return DeniedText
	}
	if len(reason) > MaxDeniedReason {
		cut := MaxDeniedReason
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut] + " [reason cut]"
	}
	var q bytes.Buffer
	enc := json.NewEncoder(&q)
	enc.SetEscapeHTML(false) // the model reads <, > and & as written
	_ = enc.Encode(reason)   // a string: cannot fail
	return DeniedText + DeniedReasonLead + strings.TrimSuffix(q.String(), "\n")
}

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

// Usage sums the usage of the completed steps and of the summaries of the
// turn's steps (Compacting). Steps counts the steps, whatever their
// metadata says (streams written before it said steps 1 say 0).
func (t Turn) Usage() reducer.Usage {
	u := t.stepUsage
	if !t.summed {
		u = reducer.Usage{}
		for _, s := range t.Steps {
			u = addStepUsage(u, s.Usage)
		}
	}
	u.Steps = int64(len(t.Steps))
	u.InputTokens += t.Compacting.InputTokens
	u.OutputTokens += t.Compacting.OutputTokens
	u.CostMicroUSD += t.Compacting.CostMicroUSD
	u.InputTokens += t.Discarded.InputTokens
	u.OutputTokens += t.Discarded.OutputTokens
	u.CostMicroUSD += t.Discarded.CostMicroUSD
	return u
}

// addStepUsage adds a step's tokens and cost to u.
func addStepUsage(u, step reducer.Usage) reducer.Usage {
	u.InputTokens += step.InputTokens
	u.OutputTokens += step.OutputTokens
	u.CostMicroUSD += step.CostMicroUSD
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
	if t.Through > 0 {
		out = append(out, t.summaryMessage())
	}
	for _, s := range t.Steps[t.Through:] {
		out = s.render(out, wire)
	}
	return out
}

// render appends the step's assistant message, if it has content, its
// tool message, if it has results, and the user message steered in after
// it, if any, to out.
func (s *Step) render(out []Message, wire map[*Call]string) []Message {
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
	if len(s.Steered) > 0 {
		out = append(out, UserMessage(s.Steered))
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
		if x.Text != "" || len(x.Files) == 0 {
			m.Content = append(m.Content, Content{Type: Text, Text: x.Text})
		}
		for i := range x.Files {
			f := x.Files[i]
			m.Content = append(m.Content, Content{Type: File, File: &f})
		}
	}
	return m
}

// Build returns the model input: the ended turns' history, the open turn's
// user message, and its completed steps, each followed by the user message
// steered in after it (messages steered in before the first step follow
// the turn's own). A tool call and its result carry
// the call's wire id: the provider's id for it when that is unique in the
// input, else baton's id.
func Build(history []Message, user []reducer.Message, t Turn) []Message {
	out := make([]Message, 0, len(history)+1+2*len(t.Steps))
	out = append(out, history...)
	out = append(out, UserMessage(user))
	if len(t.Steered) > 0 {
		out = append(out, UserMessage(t.Steered))
	}
	return append(out, t.messages(history)...)
}

// input is the model input a Replayer last built, kept so the next step's
// input renders only what changed.
type input struct {
	history []Message         // the history it was built on
	user    []reducer.Message // the messages the turn answers
	before  int               // len(Replayer.before) it was built with
	head    int               // len(out) before the first step's messages
	out     []Message         // history, the user message(s), the messages of steps[:len(ends)]
	ends    []int             // len(out) after each rendered step's messages
	used    map[string]*Call  // wire ids taken: by a call, or nil for history
	wire    map[*Call]string  // the wire id of each call of steps[:assigned]
	baton   map[string]bool   // baton ids of the calls of steps[:assigned]
	// assigned counts the steps whose calls have wire ids.
	assigned int
}

// Build is conversation.Build of the turn so far: the same messages, byte
// for byte, rendering only the steps that are new or got results since the
// last Build. The returned slice and its messages are shared with the
// Replayer and valid until the next Add; the caller must not modify them.
func (r *Replayer) Build(history []Message, user []reducer.Message) []Message {
	in := &r.input
	// The user messages are compared by value: the runner's state is
	// copied on every commit, they are not.
	if in.out == nil || !same(in.history, history) || !slices.EqualFunc(in.user, user, sameMessage) || in.before != len(r.before) {
		r.reset(history, user)
	}
	// Wire ids for the new steps' calls. A new call's baton id that an
	// earlier call uses as its wire id changes that call's wire id (see
	// wireIDs): then everything renders anew.
	if in.assigned < len(r.steps) {
		for _, s := range r.steps[in.assigned:] {
			for _, c := range s.Calls {
				if owner := in.used[c.ID]; owner != nil && owner.ID != c.ID {
					r.reset(history, user)
					return r.Build(history, user)
				}
			}
		}
		for _, s := range r.steps[in.assigned:] {
			for _, c := range s.Calls {
				in.baton[c.ID] = true
			}
		}
		for _, s := range r.steps[in.assigned:] {
			for _, c := range s.Calls {
				id := c.ProviderID
				if _, taken := in.used[id]; id == "" || taken || (id != c.ID && in.baton[id]) {
					id = c.ID
				}
				in.used[id] = c
				in.wire[c] = id
			}
		}
		in.assigned = len(r.steps)
	}
	from := min(r.stale, len(in.ends))
	end := in.head
	if from > 0 {
		end = in.ends[from-1]
	}
	in.out, in.ends = in.out[:end], in.ends[:from]
	for i, s := range r.steps[from:] {
		if from+i >= r.through {
			in.out = s.render(in.out, in.wire)
		}
		in.ends = append(in.ends, len(in.out))
	}
	r.stale = len(r.steps)
	return slices.Clip(in.out)
}

// reset drops the built input and starts one on history and user.
func (r *Replayer) reset(history []Message, user []reducer.Message) {
	used := map[string]*Call{}
	for _, m := range history {
		for _, c := range m.Content {
			if c.Type == ToolCall {
				used[c.ToolCallID] = nil
			}
		}
	}
	out := make([]Message, 0, len(history)+1+2*len(r.steps))
	out = append(out, history...)
	out = append(out, UserMessage(user))
	if len(r.before) > 0 {
		out = append(out, UserMessage(r.before))
	}
	if r.through > 0 {
		out = append(out, Turn{Summary: r.summary}.summaryMessage())
	}
	r.input = input{history: history, user: slices.Clone(user), before: len(r.before), head: len(out),
		out: out, used: used, wire: map[*Call]string{}, baton: map[string]bool{}}
	r.stale = 0
}

// same reports whether a and b are the same slice: same start, same length.
func same[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Unresolved is the result recorded for a call that never got one because
// its turn ended first.
func Unresolved(outcome string) json.RawMessage {
	out, _ := json.Marshal("The tool call was not run: the turn was " + outcome + ".") // a string: cannot fail
	return out
}

// Close renders a turn for the snapshot taken when it ends: like Build, but
// calls still without a result get one, so no call is left dangling in
// later turns' input: Unresolved, or for a call in started (a side effect
// recorded as started, by call id, whose result never came) Unknown.
func Close(history []Message, user []reducer.Message, t Turn, outcome string, started map[string]bool) []Message {
	for _, c := range t.Pending() {
		out := Unresolved(outcome)
		if started[c.ID] {
			out = Unknown(outcome)
		}
		c.Result = &Content{Type: ToolResult, ToolCallID: c.ID, ToolName: c.Name, Output: out, IsError: true}
	}
	return Build(history, user, t)
}

// Unknown is the result recorded for a side effect that was started but
// never got a result because its turn ended first: it may have happened.
func Unknown(outcome string) json.RawMessage {
	out, _ := json.Marshal("The tool call was started, but the turn was " + outcome +
		" before its result was recorded: it may or may not have taken effect.") // a string: cannot fail
	return out
}

// sameMessage reports whether two user messages are equal, files and all.
func sameMessage(a, b reducer.Message) bool {
	return a.ID == b.ID && a.Text == b.Text && a.Delivery == b.Delivery && a.Trace == b.Trace && slices.Equal(a.Files, b.Files)
}
