package otel

import (
	"context"
	"errors"
	"iter"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/traceparent"
)

// remote is ctx under the turn's trace context tp, as a remote parent;
// ctx itself when tp does not parse.
func remote(ctx context.Context, tp string) context.Context {
	p, err := traceparent.Parse(tp)
	if err != nil {
		return ctx
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: p.TraceID, SpanID: p.SpanID, TraceFlags: trace.TraceFlags(p.Flags), Remote: true,
	})
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// run traces an invocation's run as "invoke_agent {agent}", a child of
// the turn's trace context (or, for the run that minted it, the span it
// names, as the trace's root), and flushes once it ends.
func (t *Tracing) run(next intercept.RunFunc) intercept.RunFunc {
	return func(ctx context.Context, r intercept.Run) (intercept.RunEnd, error) {
		parent, opts := remote(ctx, r.Trace), []trace.SpanStartOption{trace.WithAttributes(
			operationName.String("invoke_agent"), agentName.String(r.Agent), conversation.String(r.Session),
			turnID.String(r.Turn), attribute.Int("baton.invocation", r.Invocation), attribute.Bool("baton.resume", r.Resume))}
		if r.Root {
			parent, opts = asRoot(ctx, r.Trace), append(opts, trace.WithNewRoot())
		}
		ctx, span := t.tracer.Start(parent, "invoke_agent "+r.Agent, opts...)
		end, err := next(ctx, r)
		span.SetAttributes(attribute.Int("baton.steps", end.Steps))
		if end.Kind != "" {
			span.SetAttributes(attribute.String("baton.outcome", end.Kind))
		}
		if end.Cause != "" {
			span.SetAttributes(attribute.String("baton.cause", end.Cause))
		}
		fail(span, err, "")
		span.End()
		// Lambda freezes the process once the invocation returns: what
		// is still batched then may never leave. A failed flush costs the
		// spans, never the turn.
		_ = t.Flush(ctx)
		return end, err
	}
}

// step traces a model step.
func (t *Tracing) step(next intercept.StepFunc) intercept.StepFunc {
	return func(ctx context.Context, s intercept.Step) ([]parts.Part, error) {
		ctx, span := t.tracer.Start(ctx, "step", trace.WithAttributes(attribute.Int("baton.step", s.Index+1), turnID.String(s.Turn)))
		ps, err := next(ctx, s)
		fail(span, err, "")
		span.End()
		return ps, err
	}
}

// model traces a model call as "chat {model}", with its usage and finish
// reason from the call's Finish event.
func (t *Tracing) model(next intercept.ModelFunc) intercept.ModelFunc {
	return func(ctx context.Context, c intercept.ModelCall) iter.Seq2[model.Event, error] {
		return func(yield func(model.Event, error) bool) {
			name := "chat"
			if c.Identity.Name != "" {
				name += " " + c.Identity.Name
			}
			ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(modelAttrs(c)...))
			defer span.End()
			for ev, err := range next(ctx, c) {
				if err != nil {
					fail(span, err, string(model.KindOf(err)))
				} else if ev.Type == model.Finish {
					span.SetAttributes(
						attribute.Int64("gen_ai.usage.input_tokens", ev.Usage.InputTokens),
						attribute.Int64("gen_ai.usage.output_tokens", ev.Usage.OutputTokens),
						attribute.StringSlice("gen_ai.response.finish_reasons", []string{finishReason(ev.Stop)}))
				}
				if !yield(ev, err) {
					return
				}
			}
		}
	}
}

func modelAttrs(c intercept.ModelCall) []attribute.KeyValue {
	kv := []attribute.KeyValue{operationName.String("chat"), agentName.String(c.Agent), conversation.String(c.Session), turnID.String(c.Turn)}
	if p := c.Identity.Provider; p != "" {
		// gen_ai.system is the name before the conventions' 1.37.
		kv = append(kv, attribute.String("gen_ai.provider.name", p), attribute.String("gen_ai.system", p))
	}
	if c.Identity.Name != "" {
		kv = append(kv, attribute.String("gen_ai.request.model", c.Identity.Name))
	}
	if c.Request.MaxTokens > 0 {
		kv = append(kv, attribute.Int("gen_ai.request.max_tokens", c.Request.MaxTokens))
	}
	if c.Request.Step > 0 {
		kv = append(kv, attribute.Int("baton.step", c.Request.Step))
	}
	return kv
}

// finishReason is baton's stop reason as the conventions spell it.
func finishReason(s model.StopReason) string {
	if s == model.StopToolCalls {
		return "tool_calls"
	}
	return string(s)
}

// tool traces a run of a tool as "execute_tool {name}".
func (t *Tracing) tool(next intercept.ToolFunc) intercept.ToolFunc {
	return func(ctx context.Context, c intercept.ToolCall) ([]byte, error) {
		kv := []attribute.KeyValue{operationName.String("execute_tool"), attribute.String("gen_ai.tool.name", c.Call.Name),
			attribute.String("gen_ai.tool.call.id", c.Call.ID), attribute.String("gen_ai.tool.type", "function"),
			conversation.String(c.Call.Session), turnID.String(c.Call.Turn), attribute.Int("baton.step", c.Call.Step)}
		if c.Call.Execution != "" {
			kv = append(kv, attribute.String("baton.execution", c.Call.Execution), attribute.Int("baton.attempt", c.Call.Attempt))
		}
		ctx, span := t.tracer.Start(ctx, "execute_tool "+c.Call.Name, trace.WithAttributes(kv...))
		out, err := next(ctx, c)
		fail(span, err, "tool_error")
		span.End()
		return out, err
	}
}

// fail marks span failed with err, if any: its status, and error.type
// (kind, or the error's Go type).
func fail(span trace.Span, err error, kind string) {
	if err == nil {
		return
	}
	switch {
	case kind != "":
	case errors.Is(err, context.Canceled):
		kind = "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		kind = "deadline_exceeded"
	default:
		kind = "_OTHER"
	}
	span.SetAttributes(attribute.String("error.type", kind))
	span.SetStatus(codes.Error, err.Error())
}
