package metrics

import (
	"context"
	"iter"
	"time"

	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// Prices gives the price of a model call's tokens, nil when it has none:
// the agent's for its steps, its compaction's for a summary.
type Prices func(c intercept.ModelCall) *reducer.Price

// Interceptor records model calls, tool calls and steps, and every fact
// appended through the fact log it decorates. prices may be nil (no
// cost). A nil Recorder's Interceptor wraps nothing.
func (r *Recorder) Interceptor(prices Prices) intercept.Interceptor {
	if r == nil {
		return intercept.Interceptor{}
	}
	return intercept.Interceptor{
		Model: func(next intercept.ModelFunc) intercept.ModelFunc { return r.model(next, prices) },
		Tool:  r.tool,
		Step:  r.step,
		Facts: func(next session.FactLog) session.FactLog { return facts{FactLog: next, r: r} },
	}
}

// model times a model call: to its first content event and to its end.
func (r *Recorder) model(next intercept.ModelFunc, prices Prices) intercept.ModelFunc {
	return func(ctx context.Context, c intercept.ModelCall) iter.Seq2[model.Event, error] {
		return func(yield func(model.Event, error) bool) {
			began := time.Now()
			var first time.Duration
			var usage *model.Usage
			var failed error
			for ev, err := range next(ctx, c) {
				switch {
				case err != nil:
					failed = err
				case first == 0 && (ev.Type == model.TextDelta || ev.Type == model.ReasoningDelta || ev.Type == model.ToolCall):
					first = time.Since(began)
				case ev.Type == model.Finish:
					u := ev.Usage
					usage = &u
				}
				if !yield(ev, err) {
					break
				}
			}
			r.modelCall(c, prices, time.Since(began), first, usage, failed)
		}
	}
}

// modelCall writes a model call's line, and its error's.
func (r *Recorder) modelCall(c intercept.ModelCall, prices Prices, took, first time.Duration, u *model.Usage, err error) {
	vals := []Value{{ModelCalls, 1}, {ModelLatency, ms(took)}}
	if first > 0 {
		vals = append(vals, Value{TimeToFirstToken, ms(first)})
	}
	if u != nil {
		vals = append(vals, Value{InputTokens, float64(u.InputTokens)}, Value{OutputTokens, float64(u.OutputTokens)})
		if prices != nil {
			if p := prices(c); p != nil {
				vals = append(vals, Value{CostMicroUSD, float64(p.Cost(u.InputTokens, u.OutputTokens))})
			}
		}
	}
	r.emit(c.Agent, "", vals...)
	if err != nil {
		r.emit(c.Agent, string(model.KindOf(err)), Value{ModelErrors, 1})
	}
}

// tool times a run of a tool.
func (r *Recorder) tool(next intercept.ToolFunc) intercept.ToolFunc {
	return func(ctx context.Context, c intercept.ToolCall) ([]byte, error) {
		began := time.Now()
		out, err := next(ctx, c)
		vals := []Value{{ToolCalls, 1}, {ToolLatency, ms(time.Since(began))}}
		if err != nil {
			vals = append(vals, Value{ToolErrors, 1})
		}
		r.emit("", c.Call.Name, vals...)
		return out, err
	}
}

// step times a model step.
func (r *Recorder) step(next intercept.StepFunc) intercept.StepFunc {
	return func(ctx context.Context, s intercept.Step) ([]parts.Part, error) {
		began := time.Now()
		ps, err := next(ctx, s)
		if err != nil {
			r.emit(s.Agent, "", Value{StepErrors, 1}, Value{StepLatency, ms(time.Since(began))})
		} else {
			r.emit(s.Agent, "", Value{Steps, 1}, Value{StepLatency, ms(time.Since(began))})
		}
		return ps, err
	}
}
