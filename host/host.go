package host

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/lambdahttp"
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/mcpserve"
	"github.com/baton-run/baton/internal/tick"
)

// Config is what a program brings to baton: its agents (baton.Agent), the
// Go tools the agent file's agents (BATON_AGENTS) may name, the model
// providers, the MCP client, the invoker of lambda tools, interceptors,
// the key store and where metrics go. Its fields:
//
//	Agents       []baton.Agent   // the program's agents; New checks and builds each
//	Tools        []baton.Tool    // Go tools the agent file's agents may name
//	Providers    []Provider      // model providers: providers.All(), or the few used
//	MCP          MCPDialer       // reaches MCP servers: providers.MCP()
//	MCPServer    MCPServer       // serves the agents over MCP at /mcp: providers.MCPServer() (the operator's)
//	Lambda       Lambda          // invokes lambda tools, hands pinned turns to their versions: providers.Lambda()
//	Interceptors []Interceptor   // wrap model, tool, step and store calls, first outermost
//	KeyStore     KeyStore        // model keys by secret: providers.KeyStore()
//	Metrics      io.Writer       // CloudWatch EMF lines (os.Stderr in Lambda); nil records none
//
// Only what a program sets is linked: a function that runs no model (the
// operator, the tick) registers no provider, no MCP client, no lambda
// invoker and no key store. Config.Check checks the Go agents as New
// does, without AWS: a unit test of an agent's definition.
type Config = app.Config

// Resources are what an App runs on when the program makes them itself,
// as the dev server and batontest do: the resources template.yaml creates,
// the agent file and the settings template.yaml gives the functions. A
// deployed function reads the same from its environment (New). Its fields,
// each with the variable a function reads it from:
//
//	Table, Bucket, QueueURL string         // required: BATON_TABLE, BATON_BUCKET, BATON_QUEUE_URL
//	StreamBucket     string                // turn streams (Bucket when empty): BATON_STREAM_BUCKET
//	StreamBucketType streams.BucketType    // streams.Standard (default) or streams.Express: BATON_STREAM_BUCKET_TYPE
//	AgentFile        string                // path or s3://bucket/key, run beside Config.Agents: BATON_AGENTS
//	WakeGrace        time.Duration         // before the tick re-sends a lost wake: BATON_WAKE_GRACE
//	Hold             time.Duration         // how long a chat or stream read is held open: BATON_HOLD
//	ChatAgent        string                // the agent of chats that name none: BATON_CHAT_AGENT
//	ChatOrigins      []string              // browser origins the chat's CORS allows: BATON_CHAT_ORIGINS
//	JWTIssuer, JWTAudience, JWKSURL string // callers' bearer JWTs: BATON_JWT_ISSUER, BATON_JWT_AUDIENCE, BATON_JWKS_URL
//	RetentionDays    int                   // days an idle session is kept, 0 for ever: BATON_RETENTION_DAYS
//	ClaimsPoll       time.Duration         // a blocked turn's poll of the claims broker: BATON_CLAIMS_POLL
//	CallbackURL      string                // the API's public URL, for callback tools' URLs: BATON_CALLBACK_URL
//	MCPAgents        string                // the agents served as MCP tools at /mcp ("*": all; "": none): BATON_MCP_AGENTS
//	Build            string                // the code's name each turn records: AWS_LAMBDA_FUNCTION_VERSION
//	Function         string                // the function's name, to hand pinned turns to its versions: AWS_LAMBDA_FUNCTION_NAME
//
// A zero setting takes its default; NewOn refuses a missing table, bucket
// or queue and a setting out of range, naming its variable.
type Resources = app.Resources

// Provider is a model provider agents may name; package
// github.com/baton-run/baton/providers has baton's.
type Provider = app.Provider

// KeyStore makes the secret store of model keys; see Config.KeyStore.
type KeyStore = app.KeyStore

// Lambda makes the invoker of lambda tools on the app's AWS clients; see
// Config.Lambda.
type Lambda = app.Lambda

// MCPDialer reaches MCP servers (Config.MCP); providers.MCP() returns
// baton's.
type MCPDialer = mcp.Dialer

// MCPServer serves the agents over MCP at /mcp (Config.MCPServer);
// providers.MCPServer() returns baton's, which the operator function
// registers.
type MCPServer = mcpserve.Server

// Interceptor wraps the calls a turn makes: model calls, tool calls,
// steps and store calls (Config.Interceptors); package providers/otel
// makes one that traces them.
type Interceptor = intercept.Interceptor

// App is baton wired for one program: its agents, the session store on
// the table, bucket and queue, the runner and the waker. A Lambda main
// starts one of its handlers (or calls Main); the dev server serves its
// Operator.
//
// When the program brings agents and names no agent file, the embedded
// demo agent is left out.
type App struct{ a *app.App }

// New builds the App of a deployed function from the process environment
// (the variables template.yaml sets: BATON_TABLE, BATON_BUCKET,
// BATON_QUEUE_URL, and optionally BATON_AGENTS, BATON_WAKE_GRACE,
// BATON_STREAM_BUCKET, BATON_STREAM_BUCKET_TYPE and LOG_FORMAT) and the AWS
// region and credentials Lambda puts there. A program outside Lambda
// builds its AWS configuration itself (the SDK's config.LoadDefaultConfig)
// and calls NewOn.
func New(ctx context.Context, c Config) (*App, error) {
	a, err := app.FromOS(ctx, c)
	if err != nil {
		return nil, err
	}
	return &App{a}, nil
}

// NewOn builds the App on the given resources, reached with cfg (an
// emulator's when cfg.BaseEndpoint is set: S3 is then addressed by path),
// as the dev server and batontest do. log nil discards.
func NewOn(ctx context.Context, c Config, r Resources, cfg aws.Config, log *slog.Logger) (*App, error) {
	a, err := app.NewOn(ctx, c, r, cfg, log)
	if err != nil {
		return nil, err
	}
	return &App{a}, nil
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
// The daily schedule whose event has detail-type RetentionDetailType runs
// the retention sweep instead (Resources.RetentionDays,
// BATON_RETENTION_DAYS).
func (a *App) TickHandler() func(context.Context, events.EventBridgeEvent) (any, error) {
	return tick.Scheduled(a.a.Tick(), a.a.Retention())
}

// RetentionDetailType is the detail-type of the daily schedule's event
// that runs the retention sweep (TickHandler).
const RetentionDetailType = tick.RetentionDetailType

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
	streamed := lambdahttp.StreamingHandler(w.Operator(identity, w.Resources.Hold, ""), lambdahttp.WithLogger(w.Log))
	short := *w
	short.Resources.Hold = BufferedHold
	if w.Resources.Hold > 0 {
		short.Resources.Hold = min(w.Resources.Hold, BufferedHold)
	}
	buffered := lambdahttp.Handler(short.Operator(identity, 0, ""), lambdahttp.WithLogger(w.Log))
	return func(ctx context.Context, e events.APIGatewayV2HTTPRequest) (any, error) {
		if lambdahttp.FunctionURL(e) {
			return streamed(ctx, e)
		}
		return buffered(ctx, e)
	}
}

// Operator is the operator HTTP API with its chat endpoint, behind no
// door, for a program that serves it itself (the dev server, a test):
// identity names a request's caller (a request it names none for, or any
// when identity is nil, has no caller, and its session routes answer 401),
// hold is how long a stream read may wait for new parts (0 answers at
// once), and chatAgent serves chats that name no agent when
// Resources.ChatAgent is unset.
func (a *App) Operator(identity func(*http.Request) (string, bool), hold time.Duration, chatAgent string) http.Handler {
	return a.a.Operator(identity, hold, chatAgent)
}

// AgentNames are the names of the App's agents, sorted.
func (a *App) AgentNames() []string { return a.a.AgentNames() }

// The calls an Interceptor wraps, each a function of the next handler:
// a model call (ModelCall, ModelFunc), a tool call (ToolCall, ToolFunc),
// a model step (Step, StepFunc) and an invocation's run of a turn (Run,
// RunEnd, RunFunc).
type (
	ModelCall = intercept.ModelCall
	ModelFunc = intercept.ModelFunc
	ToolCall  = intercept.ToolCall
	ToolFunc  = intercept.ToolFunc
	Step      = intercept.Step
	StepFunc  = intercept.StepFunc
	Run       = intercept.Run
	RunEnd    = intercept.RunEnd
	RunFunc   = intercept.RunFunc
)
