package model

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/baton-run/baton/pkg/conversation"
)

// Script is a scripted model's file: the steps of a turn, played in order.
type Script struct {
	Steps []ScriptStep `json:"steps"`
}

// ScriptStep is one model step of a script.
type ScriptStep struct {
	// Delay is how long the step takes, as a Go duration ("200ms"). Half of
	// the text streams before it and half after.
	Delay     string       `json:"delay,omitempty"`
	Reasoning string       `json:"reasoning,omitempty"`
	Text      string       `json:"text,omitempty"`
	ToolCalls []ScriptCall `json:"toolCalls,omitempty"`

	delay time.Duration
}

// ScriptCall is a tool call a scripted step makes.
type ScriptCall struct {
	// ID, when given, is the id the model gives the call, even if empty or
	// repeated, as some providers do. Without it the call gets
	// call_<assistant messages so far>_<index>, unique in the conversation.
	ID    *string         `json:"id,omitempty"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Scripted is a deterministic Model. It keeps no state between calls: the
// step it plays is the number of assistant messages after the last user
// message, so a fresh invocation continues where the last one stopped.
type Scripted struct {
	script Script
}

// ParseScript parses and validates a script.
func ParseScript(data []byte) (*Scripted, error) {
	var s Script
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("model: parse script: %w", err)
	}
	if len(s.Steps) == 0 {
		return nil, fmt.Errorf("model: script has no steps")
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Delay != "" {
			d, err := time.ParseDuration(st.Delay)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("model: script step %d: bad delay %q", i, st.Delay)
			}
			st.delay = d
		}
		if st.Text == "" && len(st.ToolCalls) == 0 {
			return nil, fmt.Errorf("model: script step %d has neither text nor tool calls", i)
		}
		for j, c := range st.ToolCalls {
			if c.Name == "" {
				return nil, fmt.Errorf("model: script step %d call %d has no name", i, j)
			}
			var obj map[string]any
			if len(c.Input) == 0 {
				st.ToolCalls[j].Input = json.RawMessage(`{}`)
			} else if err := json.Unmarshal(c.Input, &obj); err != nil {
				return nil, fmt.Errorf("model: script step %d call %d: input is not a JSON object: %w", i, j, err)
			}
		}
	}
	return &Scripted{script: s}, nil
}

// WithDelay returns a copy of the script whose every step takes d.
func (m *Scripted) WithDelay(d time.Duration) *Scripted {
	c := &Scripted{script: Script{Steps: append([]ScriptStep(nil), m.script.Steps...)}}
	for i := range c.script.Steps {
		c.script.Steps[i].delay = d
	}
	return c
}

// Steps is the number of steps in the script.
func (m *Scripted) Steps() int { return len(m.script.Steps) }

// Stream plays the step the conversation has reached.
func (m *Scripted) Stream(ctx context.Context, req Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		step, assistants, in := position(req.Messages)
		if step >= len(m.script.Steps) {
			yield(Event{}, &Error{Kind: InvalidRequest, Err: fmt.Errorf("script has %d steps; the turn asks for step %d", len(m.script.Steps), step+1)})
			return
		}
		st := m.script.Steps[step]
		if st.Reasoning != "" && !yield(Event{Type: ReasoningDelta, Text: st.Reasoning}, nil) {
			return
		}
		words := strings.SplitAfter(st.Text, " ")
		half := len(words) / 2
		for _, w := range words[:half] {
			if !yield(Event{Type: TextDelta, Text: w}, nil) {
				return
			}
		}
		if st.delay > 0 {
			t := time.NewTimer(st.delay)
			select {
			case <-ctx.Done():
				t.Stop()
				yield(Event{}, fmt.Errorf("model: scripted step %d: %w", step, ctx.Err()))
				return
			case <-t.C:
			}
		}
		for _, w := range words[half:] {
			if w != "" && !yield(Event{Type: TextDelta, Text: w}, nil) {
				return
			}
		}
		for i, c := range st.ToolCalls {
			call := Call{ID: fmt.Sprintf("call_%d_%d", assistants, i), Name: c.Name, Input: c.Input}
			if c.ID != nil {
				call.ID = *c.ID
			}
			if !yield(Event{Type: ToolCall, Call: call}, nil) {
				return
			}
		}
		stop := StopEnd
		if len(st.ToolCalls) > 0 {
			stop = StopToolCalls
		}
		yield(Event{Type: Finish, Stop: stop, Usage: Usage{InputTokens: int64(in/4 + 1), OutputTokens: int64(len(st.Text)/4 + 1)}}, nil)
	}
}

// position returns the step index within the current turn, the number of
// assistant messages in the whole conversation, and the bytes of text,
// input and output in msgs, in one pass that reads each content in place:
// copying them, or a second pass, would make a step's cost grow with the
// conversation's length more than it must.
func position(msgs []conversation.Message) (step, assistants, in int) {
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case conversation.User:
			step = 0
		case conversation.Assistant:
			step++
			assistants++
		}
		for j := range m.Content {
			c := &m.Content[j]
			in += len(c.Text) + len(c.Input) + len(c.Output)
		}
	}
	return step, assistants, in
}
