package baton

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/lambdahttp"
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/metrics"
	"github.com/baton-run/baton/internal/tick"
)

// Config is what a program brings to baton: its agents, and the Go tools
// the agent file's agents (BATON_AGENTS) may name.
type Config struct {
	// Agents are the program's agents; New builds each (see Agent.Build).
	Agents []Agent
	// Tools may be named by the agent file's agents, as built-ins are.
	Tools []Tool
	// Providers are the model providers the agent file's agents may name:
	// providers.All(), or the few a program uses. Only these are linked
	// into the program; a function that runs no model (the operator, the
	// tick) registers none.
	Providers []Provider
	// MCP is the client that reaches the agents' MCP servers:
	// providers.MCP() is baton's, on the official MCP Go SDK. Only a
	// program that sets it links that SDK; a function that runs no turn
	// (the operator, the tick) sets none. Without one, a turn of an agent
	// with MCP servers fails to list their tools.
	MCP MCPDialer
	// Lambda invokes the agent file's lambda tools: providers.Lambda() is
	// baton's, on the AWS SDK's Lambda client. Only a program that sets it
	// links that client; a function that runs no tool (the operator, the
	// tick) sets none. Without one, a call of a lambda tool fails its turn.
	Lambda Lambda
	// Interceptors wrap every model call, tool call, step and store call,
	// the first outermost: the seam for tracing and metrics (see package
	// intercept). None adds nothing to the hot path.
	Interceptors []Interceptor
	// KeyStore is where agents' model keys named by secret are fetched
	// from (an agent's apiKeySecret, or BATON_<PROVIDER>_KEY_SECRET, which
	// template.yaml sets from AnthropicKeySecret and OpenAIKeySecret):
	// providers.KeyStore() reads Secrets Manager and SSM Parameter Store.
	// Only a program that sets it links those clients; a function that
	// runs no model sets none.
	KeyStore KeyStore
	// Metrics, when set, receives the App's metrics as CloudWatch Embedded
	// Metric Format lines (package metrics): a Lambda main passes os.Stderr,
	// where its logger writes, and CloudWatch Logs extracts them, with no
	// API call. Their Function dimension is AWS_LAMBDA_FUNCTION_NAME
	// ("local" outside Lambda). Nil records none, at no cost.
	Metrics io.Writer
}

// Provider is a model provider agents may name; package
// github.com/baton-run/baton/providers has baton's.
type Provider = app.Provider

// KeyStore makes the secret store of model keys; see Config.KeyStore.
type KeyStore = app.KeyStore

// Lambda makes the invoker of lambda tools on the app's AWS clients; see
// Config.Lambda.
type Lambda = app.Lambda

// Interceptor wraps the calls a turn makes; see package intercept.
type Interceptor = intercept.Interceptor

// App is baton wired for one program: its agents, the session store on
// the table, bucket and queue, the runner and the waker. A Lambda main
// starts one of its handlers (or calls Main); the dev server and batontest
// run the same parts through its other methods.
//
// When the program brings agents and names no agent file, the embedded
// demo agent is left out.
type App struct{ a *app.App }

// New builds the App of a deployed function from the process environment
// (the variables template.yaml sets: BATON_TABLE, BATON_BUCKET,
// BATON_QUEUE_URL, and optionally BATON_AGENTS, BATON_WAKE_GRACE,
// BATON_STREAM_BUCKET, BATON_STREAM_BUCKET_TYPE and LOG_FORMAT) and the AWS
// region and credentials Lambda puts there (awsenv.FromEnv). A program
// outside Lambda builds its clients with package awsenv/awsconfig (the
// SDK's full chain: profiles, SSO, instance roles) and calls NewOn.
func New(ctx context.Context, c Config) (*App, error) {
	var log *slog.Logger
	if env, err := app.EnvFromOS(); err == nil {
		log = app.OSLogger(env)
	}
	x, err := c.extras(ctx, log)
	if err != nil {
		return nil, err
	}
	a, err := app.FromOSWith(ctx, x)
	if err != nil {
		return nil, err
	}
	return &App{a}, nil
}

// Resources are what an App runs on when the program makes them itself,
// as the dev server and batontest do: the resources template.yaml creates
// and the settings it gives the functions.
type Resources struct {
	// Table, Bucket and QueueURL are the sessions table, the bucket and
	// the wake queue; all three are required.
	Table, Bucket, QueueURL string
	// StreamBucket holds turn streams and snapshots (Bucket when empty);
	// StreamBucketType is "Standard" (the default) or "Express", an S3
	// Express One Zone directory bucket.
	StreamBucket, StreamBucketType string
	// AgentFile is an agent file whose agents run besides the Config's: a
	// path, an s3://bucket/key URL, or empty for none (the embedded demo
	// agent when the Config brings no agents).
	AgentFile string
	// Settings are the functions' other environment variables by name, as
	// template.yaml sets them (BATON_WAKE_GRACE, BATON_HOLD,
	// BATON_CHAT_AGENT, BATON_CHAT_ORIGINS, BATON_JWT_ISSUER,
	// BATON_JWT_AUDIENCE, BATON_JWKS_URL, BATON_RETENTION_DAYS); one that
	// is missing takes its default. A field above that is set wins over
	// its variable here.
	Settings map[string]string
}

// env reads r as the environment of a function, with the same checks.
func (r Resources) env() (app.Env, error) {
	fields := map[string]string{app.EnvTable: r.Table, app.EnvBucket: r.Bucket, app.EnvQueueURL: r.QueueURL,
		app.EnvStreamBucket: r.StreamBucket, app.EnvStreamBucketType: r.StreamBucketType, app.EnvAgents: r.AgentFile}
	e, err := app.EnvFrom(func(name string) string {
		if v := fields[name]; v != "" {
			return v
		}
		return r.Settings[name]
	})
	if err != nil {
		return app.Env{}, fmt.Errorf("baton: resources: %w", err)
	}
	return e, nil
}

// NewOn builds the App on the given resources, reached with cfg (an
// emulator's when cfg.BaseEndpoint is set: S3 is then addressed by path),
// as the dev server and batontest do. log nil discards.
func NewOn(ctx context.Context, c Config, r Resources, cfg aws.Config, log *slog.Logger) (*App, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	env, err := r.env()
	if err != nil {
		return nil, err
	}
	x, err := c.extras(ctx, log)
	if err != nil {
		return nil, err
	}
	a, err := app.NewWith(ctx, env, awsenv.FromConfig(cfg), log, x)
	if err != nil {
		return nil, err
	}
	return &App{a}, nil
}

// extras builds the agents of c; every agent's errors are reported. Their
// MCP client logs to log (mcp.WithLog).
func (c Config) extras(ctx context.Context, log *slog.Logger) (app.Extras, error) {
	c.MCP = mcp.WithLog(c.MCP, log)
	x := app.Extras{Tools: c.Tools, Providers: c.Providers, MCP: c.MCP, Lambda: c.Lambda, Interceptors: c.Interceptors, KeyStore: c.KeyStore, Metrics: metrics.Lambda(c.Metrics)}
	var errs []error
	for _, a := range c.Agents {
		t, err := a.BuildWith(ctx, c.MCP)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		x.Agents = append(x.Agents, t)
	}
	return x, errors.Join(errs...)
}

// ResumeHandler is the resume function's handler: SQS wakes in, batch
// item failures out for redelivery.
func (a *App) ResumeHandler() func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return a.a.Worker().HandleSQS
}

// TickHandler is the tick function's handler, run on a schedule: it reaps
// turns whose invocation died, denies expired approvals and re-sends lost
// wakes.
//
// The daily schedule whose event has detail-type tick.RetentionDetailType
// runs the retention sweep instead (tick.Retention, BATON_RETENTION_DAYS).
func (a *App) TickHandler() func(context.Context, events.EventBridgeEvent) (any, error) {
	return tick.Scheduled(a.a.Tick(), a.a.Retention())
}

// BufferedHold bounds a held chat response or turn stream answered through
// a buffered door (an HTTP API gives up on the function after 30 s).
const BufferedHold = 25 * time.Second

// OperatorHandler is the operator function's handler. It serves both
// doors of template.yaml: a Lambda Function URL with InvokeMode
// RESPONSE_STREAM (the answer streams as it is written: chat and turn
// streams reach the client live, held up to BATON_HOLD) and API Gateway's
// HTTP API (the answer is buffered, and held streams end within
// BufferedHold). Either way the caller is the subject of the request's
// bearer JWT, verified here against the issuer's JWKS (BATON_JWT_ISSUER,
// BATON_JWT_AUDIENCE, BATON_JWKS_URL) before any read or write; without
// that configuration every session route answers 401.
func (a *App) OperatorHandler() func(context.Context, events.APIGatewayV2HTTPRequest) (any, error) {
	w := a.a
	identity := func(*http.Request) (string, bool) { return "", false }
	if v, err := w.Verifier(); err != nil {
		w.Log.Error("operator: callers cannot be verified; every session route answers 401", "err", err)
	} else {
		identity = v.Identity
	}
	streamed := lambdahttp.StreamingHandler(w.Operator(identity, w.Env.Hold, ""), lambdahttp.WithLogger(w.Log))
	short := *w
	short.Env.Hold = BufferedHold
	if w.Env.Hold > 0 {
		short.Env.Hold = min(w.Env.Hold, BufferedHold)
	}
	buffered := lambdahttp.Handler(short.Operator(identity, 0, ""), lambdahttp.WithLogger(w.Log))
	return func(ctx context.Context, e events.APIGatewayV2HTTPRequest) (any, error) {
		if lambdahttp.FunctionURL(e) {
			return streamed(ctx, e)
		}
		return buffered(ctx, e)
	}
}
