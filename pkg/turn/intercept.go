package turn

import (
	"context"
	"iter"
	"time"

	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/tool"
)

// hooks are a run's interceptor chains (see Runner.Interceptors); each is
// nil when no interceptor wraps that kind of call, and the run then makes
// the call directly.
type hooks struct {
	model intercept.ModelFunc
	tool  intercept.ToolFunc
	step  intercept.StepFunc
}

// intercept builds the run's chains from the runner's interceptors.
func (ru *run) intercept() {
	ics := ru.r.Interceptors
	if len(ics) == 0 {
		return
	}
	ru.hooks.model = intercept.Model(ics, func(ctx context.Context, c intercept.ModelCall) iter.Seq2[model.Event, error] {
		return c.Model.Stream(ctx, c.Request)
	})
	ru.hooks.tool = intercept.Tool(ics, func(ctx context.Context, c intercept.ToolCall) ([]byte, error) {
		return tool.Invoke(ctx, c.Tool, c.Call)
	})
	ru.hooks.step = intercept.Steps(ics, func(ctx context.Context, _ intercept.Step) ([]parts.Part, error) {
		return ru.stepper.step(ctx)
	})
}

// stream calls model m with req, through the model interceptors.
func (ru *stepper) stream(ctx context.Context, m model.Model, req model.Request) iter.Seq2[model.Event, error] {
	if ru.hooks.model == nil {
		return m.Stream(ctx, req)
	}
	return ru.hooks.model(ctx, intercept.ModelCall{Session: ru.out.Session, Turn: ru.out.Turn, Agent: ru.agent.Name, Model: m,
		Identity: ru.identity(m), Request: req})
}

// invoke runs tool t for call c, through the tool interceptors.
func (ru *ledger) invoke(ctx context.Context, t tool.Tool, c tool.Call) ([]byte, error) {
	defer ru.timing.tool(time.Now())
	if ru.hooks.tool == nil {
		return tool.Invoke(ctx, t, c)
	}
	return ru.hooks.tool(ctx, intercept.ToolCall{Tool: t, Call: c})
}

// runStep runs the next step, through the step interceptors.
func (ru *stepper) runStep(ctx context.Context) ([]parts.Part, error) {
	if ru.hooks.step == nil {
		return ru.step(ctx)
	}
	return ru.hooks.step(ctx, intercept.Step{Session: ru.out.Session, Turn: ru.out.Turn, Agent: ru.agent.Name, Index: len(ru.turn.Steps)})
}
