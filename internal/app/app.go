package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/metrics"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// The environment variables baton reads. template.yaml sets the same ones.
const (
	EnvTable     = "BATON_TABLE"
	EnvBucket    = "BATON_BUCKET"
	EnvQueueURL  = "BATON_QUEUE_URL"
	EnvAgents    = "BATON_AGENTS"
	EnvLogFormat = "LOG_FORMAT"
	// EnvWakeGrace is how long the tick waits for a wake to resume a turn
	// before it counts the wake as lost and sends another (a Go duration).
	EnvWakeGrace = "BATON_WAKE_GRACE"
	// EnvChatAgent is the agent of chats whose request names none.
	EnvChatAgent = "BATON_CHAT_AGENT"
	// EnvChatOrigins are the comma-separated browser origins CORS lets call
	// the chat endpoint ("*" for any); none when empty.
	EnvChatOrigins = "BATON_CHAT_ORIGINS"
	// EnvJWTIssuer and EnvJWTAudience are the iss and aud (or client_id)
	// the operator function requires of every caller's bearer JWT;
	// EnvJWKSURL is where the issuer's keys are (empty: discovered from
	// the issuer's /.well-known/openid-configuration).
	EnvJWTIssuer   = "BATON_JWT_ISSUER"
	EnvJWTAudience = "BATON_JWT_AUDIENCE"
	EnvJWKSURL     = "BATON_JWKS_URL"
	// EnvHold is how long the operator function holds a chat response or
	// a turn stream open before it ends it at a position the client
	// resumes from (a Go duration); it must end before the function's
	// Timeout.
	EnvHold = "BATON_HOLD"
	// EnvStreamBucket is the bucket of turn streams and snapshots; empty
	// means BATON_BUCKET.
	EnvStreamBucket = "BATON_STREAM_BUCKET"
	// EnvStreamBucketType is that bucket's type: Standard (the default) or
	// Express, an S3 Express One Zone directory bucket.
	EnvStreamBucketType = "BATON_STREAM_BUCKET_TYPE"
	// EnvRetentionDays is how many days an idle session is kept before the
	// daily retention sweep deletes it; 0 or unset keeps every session.
	// At most MaxRetentionDays.
	EnvRetentionDays = "BATON_RETENTION_DAYS"
	// EnvClaimsPoll is how long a turn blocked on resource claims waits
	// before it asks the broker again without a release's wake (a Go
	// duration); unset means claims.DefaultPoll (30s).
	EnvClaimsPoll = "BATON_CLAIMS_POLL"
)

// MaxRetentionDays is the longest retention BATON_RETENTION_DAYS may set:
// 36,500 days, a hundred years, far inside what a time.Duration holds
// (past 106,751 days it would overflow: negative, turning retention off,
// or wrapped round to minutes, deleting every session idle that long).
// template.yaml's RetentionDays has it as its MaxValue.
const MaxRetentionDays = 36500

// Vars lists every environment variable baton's code reads, besides the
// AWS SDK's own (AWS_REGION, AWS_ENDPOINT_URL, credentials).
func Vars() []string {
	return []string{EnvTable, EnvBucket, EnvQueueURL, EnvAgents, EnvLogFormat, EnvWakeGrace, EnvChatAgent, EnvChatOrigins,
		EnvJWTIssuer, EnvJWTAudience, EnvJWKSURL, EnvHold, EnvStreamBucket, EnvStreamBucketType, EnvRetentionDays, EnvClaimsPoll}
}

// Env is baton's configuration.
type Env struct {
	Table, Bucket, QueueURL string
	// Agents is a file path, an s3://bucket/key URL, or empty for the
	// embedded demo agent (none when the program brings Go agents).
	Agents string
	// LogFormat is json or text.
	LogFormat string
	// WakeGrace is the tick's grace for lost wakes; zero means its default.
	WakeGrace time.Duration
	// ChatAgent is the chat endpoint's default agent; ChatOrigins the
	// origins its CORS allows.
	ChatAgent   string
	ChatOrigins []string
	// JWTIssuer, JWTAudience and JWKSURL configure the operator function's
	// token verification (internal/auth).
	JWTIssuer, JWTAudience, JWKSURL string
	// Hold bounds a held chat response or turn stream; zero means the
	// chat's default.
	Hold time.Duration
	// StreamBucket holds turn streams and snapshots (Bucket when empty);
	// StreamBucketType says whether it is an S3 Standard bucket (the
	// default) or an S3 Express One Zone directory bucket.
	StreamBucket     string
	StreamBucketType streams.BucketType
	// Retention is how long an idle session is kept (BATON_RETENTION_DAYS);
	// zero keeps every session.
	Retention time.Duration
	// ClaimsPoll is the claims broker's poll (BATON_CLAIMS_POLL); zero
	// means claims.DefaultPoll.
	ClaimsPoll time.Duration
}

// AgentsFrom is the agent file the functions read from the variables
// getenv gives (BATON_AGENTS): a path, an s3:// URL, or "" for none.
func AgentsFrom(getenv func(string) string) string { return getenv(EnvAgents) }

// EnvFromOS reads Env from the process environment.
func EnvFromOS() (Env, error) { return EnvFrom(os.Getenv) }

// EnvFrom reads Env from the variables getenv gives, such as those
// template.yaml sets for a function.
func EnvFrom(getenv func(string) string) (Env, error) {
	e := Env{
		Table:        getenv(EnvTable),
		Bucket:       getenv(EnvBucket),
		QueueURL:     getenv(EnvQueueURL),
		Agents:       AgentsFrom(getenv),
		LogFormat:    getenv(EnvLogFormat),
		ChatAgent:    getenv(EnvChatAgent),
		ChatOrigins:  chat.ParseOrigins(getenv(EnvChatOrigins)),
		JWTIssuer:    getenv(EnvJWTIssuer),
		JWTAudience:  getenv(EnvJWTAudience),
		JWKSURL:      getenv(EnvJWKSURL),
		StreamBucket: getenv(EnvStreamBucket),
	}
	if h := getenv(EnvHold); h != "" {
		d, err := time.ParseDuration(h)
		if err != nil || d <= 0 {
			return Env{}, fmt.Errorf("app: %s=%q: want a positive Go duration", EnvHold, h)
		}
		e.Hold = d
	}
	t, err := streams.ParseBucketType(getenv(EnvStreamBucketType), e.StreamBucket)
	if err != nil {
		return Env{}, fmt.Errorf("app: %s: %w", EnvStreamBucketType, err)
	}
	e.StreamBucketType = t
	if r := getenv(EnvRetentionDays); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil || n < 0 || n > MaxRetentionDays {
			return Env{}, fmt.Errorf("app: %s=%q: want a whole number of days from 0 (keep every session) to %d", EnvRetentionDays, r, MaxRetentionDays)
		}
		e.Retention = time.Duration(n) * 24 * time.Hour
	}
	if p := getenv(EnvClaimsPoll); p != "" {
		d, err := time.ParseDuration(p)
		if err != nil || d <= 0 || d >= claims.DefaultWaiterTTL {
			return Env{}, fmt.Errorf("app: %s=%q: want a positive Go duration below the waiter TTL (%s)", EnvClaimsPoll, p, claims.DefaultWaiterTTL)
		}
		e.ClaimsPoll = d
	}
	if g := getenv(EnvWakeGrace); g != "" {
		d, err := time.ParseDuration(g)
		if err != nil || d <= 0 {
			return Env{}, fmt.Errorf("app: %s=%q: want a positive Go duration", EnvWakeGrace, g)
		}
		e.WakeGrace = d
	}
	var missing []string
	for name, v := range map[string]string{EnvTable: e.Table, EnvBucket: e.Bucket, EnvQueueURL: e.QueueURL} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return Env{}, fmt.Errorf("app: environment variables not set: %s", strings.Join(missing, ", "))
	}
	return e, nil
}

// LoggerFromOS is the logger of the process environment's LOG_FORMAT, on
// stderr, for a main that fails before its App has one.
func LoggerFromOS() *slog.Logger { return Logger(os.Getenv(EnvLogFormat), os.Stderr) }

// SetChatFromOS sets the chat's variables in vars (BATON_CHAT_AGENT,
// BATON_CHAT_ORIGINS) to the process environment's, for a server that
// makes its own resources (the dev server).
func SetChatFromOS(vars map[string]string) {
	vars[EnvChatAgent], vars[EnvChatOrigins] = os.Getenv(EnvChatAgent), os.Getenv(EnvChatOrigins)
}

// Logger returns a JSON logger for "json" (Lambda) and a text one otherwise.
func Logger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// App is baton, wired.
type App struct {
	Env      Env
	Clients  *awsenv.Clients
	Sessions *session.Store
	Agents   turn.AgentMap
	Runner   *turn.Runner
	Waker    wake.Waker
	Log      *slog.Logger
	// Metrics is the App's metrics recorder, nil when it records none.
	Metrics *metrics.Recorder
}

// ChatOptions are the chat endpoint's settings from the environment;
// defaultAgent serves when BATON_CHAT_AGENT is unset.
func (e Env) ChatOptions(defaultAgent string) chat.Options {
	o := chat.Options{DefaultAgent: defaultAgent, AllowedOrigins: e.ChatOrigins, Hold: e.Hold}
	if e.ChatAgent != "" {
		o.DefaultAgent = e.ChatAgent
	}
	return o
}

// Extras are what a Go program adds to the agent file: Go tools its JSON
// agents may name, and agents built in Go.
type Extras struct {
	// Tools may be named by the file's agents, besides the built-ins.
	Tools []tool.Tool
	// Agents run besides the file's; a name may not be in both.
	Agents []*turn.Agent
	// Providers are the model providers the file's agents may name (see
	// package providers). A function that runs no model needs none.
	Providers []Provider
	// MCP reaches the MCP servers of the file's agents (Go agents bring
	// their own, baton.Agent.BuildWith): package mcp/mcpsdk has baton's,
	// and providers.MCP() returns it. Nil means none, so a
	// function that runs no turn (the operator, the tick) links no MCP
	// SDK; a turn of an agent with servers then fails to list its tools
	// (mcp.NoDialerError).
	MCP mcp.Dialer
	// Lambda invokes the file's lambda tools (see Lambda); nil in a
	// function that runs no tool.
	Lambda Lambda
	// Interceptors wrap every model call, tool call, step and store call
	// of the App, the first outermost (see package intercept).
	Interceptors []intercept.Interceptor
	// KeyStore is where the file's agents' keys named by secret are
	// (apiKeySecret, BATON_<PROVIDER>_KEY_SECRET): providers.KeyStore().
	// Each key is fetched once per App, on first use, and again when its
	// provider refuses it. Nil means none.
	KeyStore KeyStore
	// Metrics records the App's metrics as CloudWatch EMF lines (package
	// metrics), innermost of the interceptors; nil records none and adds
	// nothing.
	Metrics *metrics.Recorder
}

// New builds an App on clients.
func New(ctx context.Context, env Env, clients *awsenv.Clients, log *slog.Logger) (*App, error) {
	return NewWith(ctx, env, clients, log, Extras{})
}

// NewWith is New for a program that adds its own tools and agents.
func NewWith(ctx context.Context, env Env, clients *awsenv.Clients, log *slog.Logger, x Extras) (*App, error) {
	// The MCP client logs where the app does.
	x.MCP = mcp.WithLog(x.MCP, log)
	agentMap, err := LoadAgentsWith(ctx, env.Agents, clients, x)
	if err != nil {
		return nil, err
	}
	streamStore, err := env.StreamStore(clients.S3)
	if err != nil {
		return nil, err
	}
	if x.Metrics != nil {
		x.Interceptors = append(slices.Clip(x.Interceptors), x.Metrics.Interceptor(prices(agentMap)))
	}
	waker := wake.NewSQS(clients.SQS, env.QueueURL)
	ss := session.New(dynamo.New(clients.DynamoDB, env.Table), streamStore)
	ss.Waker = waker
	ss.Log = log
	// Posts apply each agent's steering policy.
	ss.Steering = agentMap.Steering
	ss = intercept.Store(ss, x.Interceptors)
	// The claims broker shares the session table (a key space of its own).
	// The store withdraws the waiter of a blocked turn it ends.
	dynamoBroker := dynamo.NewBroker(clients.DynamoDB, env.Table)
	dynamoBroker.Fate = turn.GrantFate(ss)
	dynamoBroker.Poll = env.ClaimsPoll
	broker := intercept.Claims(dynamoBroker, x.Interceptors)
	ss.Claims = broker
	return &App{
		Env: env, Clients: clients, Sessions: ss, Agents: agentMap, Waker: waker, Log: log, Metrics: x.Metrics,
		Runner: &turn.Runner{Sessions: ss, Agents: agentMap, Waker: waker, Log: log, Interceptors: x.Interceptors, Claims: broker},
	}, nil
}

// StreamStore returns the store of turn streams on e's stream bucket, of
// its type: Express reads streams without listing order or StartAfter. An
// unknown type is refused with an error wrapping streams.ErrInvalid.
func (e Env) StreamStore(client *s3.Client) (*streams.Store, error) {
	bucket := e.StreamBucket
	if bucket == "" {
		bucket = e.Bucket
	}
	t, err := streams.ParseBucketType(string(e.StreamBucketType), bucket)
	if err != nil {
		return nil, fmt.Errorf("app: stream bucket %s: %w", bucket, err)
	}
	return streams.NewOfType(client, bucket, t), nil
}

// OSLogger is the logger of a function's App: env's LOG_FORMAT, on
// standard error.
func OSLogger(env Env) *slog.Logger { return Logger(env.LogFormat, os.Stderr) }

// FromOSWith builds an App from the process environment, the AWS region
// and credentials included (awsenv.FromEnv), as a Lambda function does,
// with the program's own tools and agents.
func FromOSWith(ctx context.Context, x Extras) (*App, error) {
	env, err := EnvFromOS()
	if err != nil {
		return nil, err
	}
	log := OSLogger(env)
	// A deployed function's credentials are in its environment; the SDK's
	// full chain (package awsenv/awsconfig) is not linked.
	clients, err := awsenv.FromEnv()
	if err != nil {
		return nil, err
	}
	return NewWith(ctx, env, clients, log, x)
}

// LoadAgents loads the agent file named by src: empty for the embedded
// demo, s3://bucket/key for an S3 object, else a file path.
func LoadAgents(ctx context.Context, src string, clients *awsenv.Clients) (turn.AgentMap, error) {
	return LoadAgentsWith(ctx, src, clients, Extras{})
}

// LoadAgentsWith is LoadAgents with the program's extras: the file's agents
// may name x.Tools, and x.Agents join them. An agent of x that shares a name
// with one of the file's, or another of x, is an error. A program with Go
// agents and no file (src empty) runs its agents only, not the demo.
func LoadAgentsWith(ctx context.Context, src string, clients *awsenv.Clients, x Extras) (turn.AgentMap, error) {
	out := turn.AgentMap{}
	if src != "" || len(x.Agents) == 0 {
		var err error
		if out, err = loadFile(ctx, src, clients, x); err != nil {
			return nil, err
		}
	}
	for _, a := range x.Agents {
		if a == nil || a.Name == "" {
			return nil, errors.New("app: a Go agent has no name")
		}
		if out.Has(a.Name) {
			return nil, fmt.Errorf("app: Go agent %q: an agent of that name is already defined", a.Name)
		}
		out[a.Name] = a
	}
	if err := out.Link(); err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return out, nil
}

func loadFile(ctx context.Context, src string, clients *awsenv.Clients, x Extras) (turn.AgentMap, error) {
	deps := Deps(clients, x.Providers, x.Lambda)
	if x.KeyStore != nil {
		deps.Keys = apikey.NewCache(x.KeyStore(clients.Config))
	}
	deps.Tools, deps.MCP = x.Tools, x.MCP
	switch {
	case src == "":
		// The demo tools are the demo agent's built-ins, and no one else's;
		// it names no program's tools.
		fsys, name := agents.Demo()
		deps.Builtins, deps.Tools = append(tool.Demo(), tool.WaitUntil()), nil
		return agents.Load(ctx, fsys, name, deps)
	case strings.HasPrefix(src, "s3://"):
		bucket, key, ok := strings.Cut(strings.TrimPrefix(src, "s3://"), "/")
		if !ok || bucket == "" || key == "" {
			return nil, fmt.Errorf("app: agents %q: want s3://bucket/key", src)
		}
		out, err := clients.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return nil, fmt.Errorf("app: agents %s: %w", src, err)
		}
		defer out.Body.Close()
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(out.Body); err != nil {
			return nil, fmt.Errorf("app: agents %s: %w", src, err)
		}
		f, err := agents.Parse("agents.json", buf.Bytes())
		if err != nil {
			return nil, err
		}
		// Scripts referenced by path cannot follow an S3 config; inline them.
		return agents.Build(ctx, noFiles{}, "agents.json", f, deps)
	default:
		abs, err := filepath.Abs(src)
		if err != nil {
			return nil, fmt.Errorf("app: agents %s: %w", src, err)
		}
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("app: agents file %s does not exist", src)
		}
		return agents.Load(ctx, os.DirFS(filepath.Dir(abs)), filepath.Base(abs), deps)
	}
}

// noFiles is a file system without files, for an agent file that has no
// directory to refer to.
type noFiles struct{}

func (noFiles) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
