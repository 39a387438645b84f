// Package otel traces baton's turns with OpenTelemetry, under the GenAI
// semantic conventions: one trace per turn, across all its invocations.
// Each invocation's run is an "invoke_agent {agent}" span whose parent is
// the turn's trace context (the traceparent its turn.started fact
// records: the request's that posted the message, or one baton minted,
// whose span is then the turn's first invocation's: the trace's root), so
// every invocation of a turn lands in the same trace; inside it, a
// "step" span per model step, a "chat {model}" span per model call
// (gen_ai.provider.name, gen_ai.request.model, gen_ai.usage.input_tokens
// and output_tokens, gen_ai.response.finish_reasons) and an
// "execute_tool {name}" span per run of a tool (gen_ai.tool.name,
// gen_ai.tool.call.id). Nothing a model or a tool says (prompts, inputs,
// outputs) is put in a span.
//
// It is built on baton's interceptor seam (package intercept): register
// it with host.Config{Interceptors: []host.Interceptor{t.Interceptor()}}.
// Only a program that imports this package links the OpenTelemetry SDK;
// the operator and the tick record a turn's trace context with package
// traceparent alone.
//
// FromEnv exports over OTLP/HTTP when the standard variables name an
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; the template's Tracing=adot points
// them at the ADOT Lambda layer's collector), and is off otherwise. Spans
// are batched and flushed before each run returns, since Lambda freezes
// the process between invocations. The exporter is this package's own
// (Exporter: OTLP protobuf written by hand), not the SDK's, which links
// grpc and the protobuf runtime: some 30 MB of a bootstrap.
package otel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/internal/intercept"
)

// Name is the instrumentation scope of baton's spans.
const Name = "github.com/baton-run/baton"

// FlushTimeout bounds the flush at the end of each run.
const FlushTimeout = 5 * time.Second

// Tracing is baton's tracer: an OpenTelemetry TracerProvider and the
// interceptor that makes its spans.
type Tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// New traces with spans batched to exp. The options add to the provider's
// (a resource, a sampler); by default the resource is the SDK's (service
// name from OTEL_SERVICE_NAME, else the Lambda function's name) and the
// sampler follows the turn's trace context. An ID generator given in opts
// replaces baton's, which gives the root span of a trace baton minted
// the ids its traceparent names.
func New(exp sdktrace.SpanExporter, opts ...sdktrace.TracerProviderOption) *Tracing {
	all := append([]sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(defaultResource()),
		sdktrace.WithIDGenerator(ids{})}, opts...)
	tp := sdktrace.NewTracerProvider(all...)
	return &Tracing{provider: tp, tracer: tp.Tracer(Name)}
}

// Enabled reports whether getenv configures an OTLP endpoint for traces
// (and OTEL_SDK_DISABLED is not "true").
func Enabled(getenv func(string) string) bool {
	if getenv("OTEL_SDK_DISABLED") == "true" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// FromEnv is tracing over OTLP/HTTP as the standard OTEL_EXPORTER_OTLP_*
// variables configure it (see ExporterFromEnv), or nil (and no error) when
// getenv names no endpoint: tracing is then off and costs nothing. Its
// service name is OTEL_SERVICE_NAME's, else the Lambda function's.
func FromEnv(ctx context.Context, getenv func(string) string) (*Tracing, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	exp, err := ExporterFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	var opts []sdktrace.TracerProviderOption
	if getenv("OTEL_SERVICE_NAME") == "" && getenv("AWS_LAMBDA_FUNCTION_NAME") != "" {
		r, err := resource.Merge(defaultResource(), resource.NewSchemaless(attribute.String("service.name", getenv("AWS_LAMBDA_FUNCTION_NAME"))))
		if err == nil {
			opts = append(opts, sdktrace.WithResource(r))
		}
	}
	return New(exp, opts...), nil
}

// defaultResource is the SDK's: its service name (OTEL_SERVICE_NAME) and
// OTEL_RESOURCE_ATTRIBUTES.
func defaultResource() *resource.Resource {
	r, err := resource.Merge(resource.Default(), resource.Environment())
	if err != nil {
		return resource.Default()
	}
	return r
}

// Provider is the TracerProvider, for a program that traces more than
// baton's turns.
func (t *Tracing) Provider() *sdktrace.TracerProvider { return t.provider }

// Flush exports the spans that ended, within FlushTimeout, even when ctx
// is done (a killed or timed-out run's spans too).
func (t *Tracing) Flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
	defer cancel()
	return t.provider.ForceFlush(ctx)
}

// Shutdown flushes and stops the provider.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// Interceptor is the interceptor that traces runs, steps, model calls and
// tool calls; a nil Tracing's wraps nothing.
func (t *Tracing) Interceptor() intercept.Interceptor {
	if t == nil {
		return intercept.Interceptor{}
	}
	return intercept.Interceptor{Run: t.run, Step: t.step, Model: t.model, Tool: t.tool}
}

// attrs common to baton's spans.
var (
	operationName = attribute.Key("gen_ai.operation.name")
	agentName     = attribute.Key("gen_ai.agent.name")
	conversation  = attribute.Key("gen_ai.conversation.id")
	turnID        = attribute.Key("baton.turn")
)
