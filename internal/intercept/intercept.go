package intercept

import (
	"context"
	"iter"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tool"
)

// ModelCall is one call of a model: the turn it serves and its request.
type ModelCall struct {
	Session, Turn, Agent string
	Model                model.Model
	// Identity names the model (its provider and name) when the agent or
	// the model says; zero otherwise.
	Identity model.Identity
	Request  model.Request
}

// ModelFunc makes a model call and streams its events.
type ModelFunc func(ctx context.Context, c ModelCall) iter.Seq2[model.Event, error]

// ToolCall is one run of a tool: the tool and what it is told of its call.
type ToolCall struct {
	Tool tool.Tool
	Call tool.Call
}

// ToolFunc runs a tool (tool.Invoke: its retries included) and returns its
// output, or its error.
type ToolFunc func(ctx context.Context, c ToolCall) ([]byte, error)

// Step is one model step of a turn: Index counts the turn's steps before
// it, from 0.
type Step struct {
	Session, Turn, Agent string
	Index                int
}

// StepFunc runs a step and returns its parts, from start-step to
// finish-step, or the error that cut it short.
type StepFunc func(ctx context.Context, s Step) ([]parts.Part, error)

// Interceptor wraps the calls it cares about; a nil field passes that kind
// of call through untouched.
type Interceptor struct {
	Run     func(next RunFunc) RunFunc
	Model   func(next ModelFunc) ModelFunc
	Tool    func(next ToolFunc) ToolFunc
	Step    func(next StepFunc) StepFunc
	Facts   func(next session.FactLog) session.FactLog
	Streams func(next session.StreamStore) session.StreamStore
	Claims  func(next claims.Broker) claims.Broker
}

// Model returns base wrapped by every interceptor's Model, the first
// outermost; nil when none wraps model calls.
func Model(ics []Interceptor, base ModelFunc) ModelFunc {
	return wrap(ics, base, func(ic Interceptor) func(ModelFunc) ModelFunc { return ic.Model })
}

// Tool returns base wrapped by every interceptor's Tool, the first
// outermost; nil when none wraps tool calls.
func Tool(ics []Interceptor, base ToolFunc) ToolFunc {
	return wrap(ics, base, func(ic Interceptor) func(ToolFunc) ToolFunc { return ic.Tool })
}

// Steps returns base wrapped by every interceptor's Step, the first
// outermost; nil when none wraps steps.
func Steps(ics []Interceptor, base StepFunc) StepFunc {
	return wrap(ics, base, func(ic Interceptor) func(StepFunc) StepFunc { return ic.Step })
}

// Store returns s decorated by every interceptor's Facts and Streams, the
// first outermost; s itself when none decorates storage.
func Store(s *session.Store, ics []Interceptor) *session.Store {
	facts := decorator(ics, func(ic Interceptor) func(session.FactLog) session.FactLog { return ic.Facts })
	streams := decorator(ics, func(ic Interceptor) func(session.StreamStore) session.StreamStore { return ic.Streams })
	if facts == nil && streams == nil {
		return s
	}
	return s.Decorate(facts, streams)
}

// Claims returns b decorated by every interceptor's Claims, the first
// outermost; b itself when none decorates the broker.
func Claims(b claims.Broker, ics []Interceptor) claims.Broker {
	if d := decorator(ics, func(ic Interceptor) func(claims.Broker) claims.Broker { return ic.Claims }); d != nil {
		return d(b)
	}
	return b
}

// wrap applies to base the wrappers pick finds in ics, the first
// outermost, and returns the zero F (nil) when it finds none.
func wrap[F any](ics []Interceptor, base F, pick func(Interceptor) func(F) F) F {
	var none F
	f, found := base, false
	for i := len(ics) - 1; i >= 0; i-- {
		if w := pick(ics[i]); w != nil {
			f, found = w(f), true
		}
	}
	if !found {
		return none
	}
	return f
}

// decorator is the composition of the decorators pick finds in ics, the
// first outermost; nil when it finds none.
func decorator[S any](ics []Interceptor, pick func(Interceptor) func(S) S) func(S) S {
	found := false
	for _, ic := range ics {
		found = found || pick(ic) != nil
	}
	if !found {
		return nil
	}
	return func(next S) S {
		for i := len(ics) - 1; i >= 0; i-- {
			if w := pick(ics[i]); w != nil {
				next = w(next)
			}
		}
		return next
	}
}
