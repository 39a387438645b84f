package batontest

import (
	"context"
	"iter"
	"sync"

	baton "github.com/baton-run/baton"
)

// Script is baton.Script for a test: the model plays the steps of the JSON
// script; a bad script fails the test.
func Script(tb TB, script string) baton.Model {
	tb.Helper()
	m, err := baton.Script([]byte(script))
	if err != nil {
		tb.Fatalf("batontest: script: %v", err)
	}
	return m
}

// Recorder is a Model that plays another and keeps each step's request:
// what the model was shown (the system prompt, the conversation, the tools
// and their schemas).
type Recorder struct {
	model baton.Model
	mu    sync.Mutex
	reqs  []baton.Request
}

// Record wraps m in a Recorder.
func Record(m baton.Model) *Recorder { return &Recorder{model: m} }

// Stream records req and plays the wrapped model's step.
func (r *Recorder) Stream(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.model.Stream(ctx, req)
}

// Requests are the recorded requests, one a step, in order.
func (r *Recorder) Requests() []baton.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]baton.Request(nil), r.reqs...)
}

// Tool is the spec of the named tool as the first step showed it to the
// model, and whether it was shown.
func (r *Recorder) Tool(name string) (baton.ToolSpec, bool) {
	reqs := r.Requests()
	if len(reqs) == 0 {
		return baton.ToolSpec{}, false
	}
	for _, t := range reqs[0].Tools {
		if t.Name == name {
			return t, true
		}
	}
	return baton.ToolSpec{}, false
}
