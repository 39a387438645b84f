package replay

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
)

// errRecordingEnds is the replayed model's error for a step past the
// recording's end, in a turn whose recording ended without an answer (the
// turn was cancelled, interrupted or its model failed).
var errRecordingEnds = errors.New("replay: the recording ends here")

// recorded is the model of a replay: step n of the turn it plays answers
// what step n of the recorded turn did (its reasoning, text and tool calls,
// its finish reason and usage).
type recorded struct {
	mu   sync.Mutex
	turn *recTurn
}

// play makes t the turn the model plays.
func (m *recorded) play(t *recTurn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turn = t
}

// Stream plays the recorded step req.Step.
func (m *recorded) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	m.mu.Lock()
	t := m.turn
	m.mu.Unlock()
	return func(yield func(model.Event, error) bool) {
		if req.Step == 0 {
			// A summariser's request (compaction): the recording keeps
			// no summary's call.
			if yield(model.Event{Type: model.TextDelta, Text: "(summary)"}, nil) {
				yield(model.Event{Type: model.Finish, Stop: model.StopEnd}, nil)
			}
			return
		}
		if t == nil || req.Step > len(t.steps) {
			if t != nil && (t.aborted != "" || t.end == "cancelled" || t.end == "interrupted" || t.end == "open") {
				yield(model.Event{}, &model.Error{Kind: model.Other, Err: errRecordingEnds})
				return
			}
			// Past the recorded steps of a turn that answered: the
			// model ends the turn, answering nothing.
			yield(model.Event{Type: model.Finish, Stop: model.StopEnd}, nil)
			return
		}
		for _, ev := range events(t, t.steps[req.Step-1]) {
			if ctx.Err() != nil {
				yield(model.Event{}, ctx.Err())
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// events are the events that make recorded step s of turn t: its content in
// stream order, each call with the input and provider id the model gave it,
// then its finish.
func events(t *recTurn, s *conversation.Step) []model.Event {
	var out []model.Event
	for _, c := range s.Content {
		switch c.Type {
		case conversation.Reasoning:
			out = append(out, model.Event{Type: model.ReasoningDelta, Text: c.Text})
			if c.Signature != "" {
				out = append(out, model.Event{Type: model.ReasoningSignature, Text: c.Signature})
			}
		case conversation.Text:
			out = append(out, model.Event{Type: model.TextDelta, Text: c.Text})
		case conversation.ToolCall:
			call := model.Call{Name: c.ToolName, Input: c.Input}
			if p, ok := t.calls[position(t.id, c.ToolCallID)]; ok {
				// The model's own input, before any operator's edit.
				call.Name, call.Input = p.ToolName, p.Input
			}
			for _, k := range s.Calls {
				if k.ID == c.ToolCallID && k.ProviderID != k.ID {
					call.ID = k.ProviderID
				}
			}
			out = append(out, model.Event{Type: model.ToolCall, Call: call})
		}
	}
	stop := model.StopReason(s.Finish)
	if stop == "" {
		stop = model.StopEnd
		if len(s.Calls) > 0 {
			stop = model.StopToolCalls
		}
	}
	return append(out, model.Event{Type: model.Finish, Stop: stop,
		Usage: model.Usage{InputTokens: s.Usage.InputTokens, OutputTokens: s.Usage.OutputTokens}})
}

// resultOf is the output part answering the call at position pos of turn
// t, and whether the recording has one.
func resultOf(t *recTurn, pos string) (parts.Part, bool) {
	p, ok := t.results[pos]
	return p, ok
}
