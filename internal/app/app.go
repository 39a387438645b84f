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
	"github.com/baton-run/baton/internal/claims/claimsdb"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/mcpserve"
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
	// EnvCallbackURL is the operator API's public URL, under which tools
	// that complete by callback get their URLs (/callbacks/{token});
	// empty hands out tokens without URLs.
	EnvCallbackURL = "BATON_CALLBACK_URL"
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
		EnvJWTIssuer, EnvJWTAudience, EnvJWKSURL, EnvHold, EnvStreamBucket, EnvStreamBucketType, EnvRetentionDays, EnvClaimsPoll, EnvCallbackURL, EnvMCPAgents}
}

// AgentsFrom is the agent file the functions read from the variables
// getenv gives (BATON_AGENTS): a path, an s3:// URL, or "" for none.
func AgentsFrom(getenv func(string) string) string { return getenv(EnvAgents) }

// EnvFromOS reads Resources from the process environment.
func EnvFromOS() (Resources, error) { return EnvFrom(os.Getenv) }

// EnvFrom reads Resources from the variables getenv gives, such as those
// template.yaml sets for a function, and checks them (Resources.Check):
// the one place baton reads a function's settings.
func EnvFrom(getenv func(string) string) (Resources, error) {
	r := Resources{
		Table:        getenv(EnvTable),
		Bucket:       getenv(EnvBucket),
		QueueURL:     getenv(EnvQueueURL),
		AgentFile:    AgentsFrom(getenv),
		ChatAgent:    getenv(EnvChatAgent),
		ChatOrigins:  chat.ParseOrigins(getenv(EnvChatOrigins)),
		JWTIssuer:    getenv(EnvJWTIssuer),
		JWTAudience:  getenv(EnvJWTAudience),
		JWKSURL:      getenv(EnvJWKSURL),
		StreamBucket: getenv(EnvStreamBucket),
		CallbackURL:  getenv(EnvCallbackURL),
		MCPAgents:    getenv(EnvMCPAgents),
		Build:        getenv("AWS_LAMBDA_FUNCTION_VERSION"),
		Function:     getenv("AWS_LAMBDA_FUNCTION_NAME"),
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{EnvHold, &r.Hold}, {EnvWakeGrace, &r.WakeGrace}} {
		if v := getenv(d.name); v != "" {
			p, err := time.ParseDuration(v)
			if err != nil || p <= 0 {
				return Resources{}, fmt.Errorf("app: %s=%q: want a positive Go duration", d.name, v)
			}
			*d.dst = p
		}
	}
	t, err := streams.ParseBucketType(getenv(EnvStreamBucketType), r.streamBucket())
	if err != nil {
		return Resources{}, fmt.Errorf("app: %s: %w", EnvStreamBucketType, err)
	}
	r.StreamBucketType = t
	if v := getenv(EnvRetentionDays); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxRetentionDays {
			return Resources{}, fmt.Errorf("app: %s=%q: want a whole number of days from 0 (keep every session) to %d", EnvRetentionDays, v, MaxRetentionDays)
		}
		r.RetentionDays = n
	}
	if p := getenv(EnvClaimsPoll); p != "" {
		d, err := time.ParseDuration(p)
		if err != nil || d <= 0 || d >= claims.DefaultWaiterTTL {
			return Resources{}, fmt.Errorf("app: %s=%q: want a positive Go duration below the waiter TTL (%s)", EnvClaimsPoll, p, claims.DefaultWaiterTTL)
		}
		r.ClaimsPoll = d
	}
	if err := r.Check(); err != nil {
		return Resources{}, err
	}
	return r, nil
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

// FromVars is EnvFrom of vars, the environment of a function by name.
func FromVars(vars map[string]string) (Resources, error) {
	return EnvFrom(func(name string) string { return vars[name] })
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
	Resources Resources
	Clients   *awsenv.Clients
	Sessions  *session.Store
	Agents    turn.AgentMap
	Runner    *turn.Runner
	Waker     wake.Waker
	Log       *slog.Logger
	// Metrics is the App's metrics recorder, nil when it records none.
	Metrics *metrics.Recorder
	// mcpServer makes the MCP endpoint (Config.MCPServer), nil for none.
	mcpServer mcpserve.Server
}

// chatOptions are the chat endpoint's settings from the environment;
// defaultAgent serves when BATON_CHAT_AGENT is unset.
func (e Resources) chatOptions(defaultAgent string) chat.Options {
	o := chat.Options{DefaultAgent: defaultAgent, AllowedOrigins: e.ChatOrigins, Hold: e.Hold}
	if e.ChatAgent != "" {
		o.DefaultAgent = e.ChatAgent
	}
	return o
}

// New builds an App on clients, with the agent file's agents only.
func New(ctx context.Context, r Resources, clients *awsenv.Clients, log *slog.Logger) (*App, error) {
	return NewWith(ctx, r, clients, log, Config{})
}

// NewOn builds c's App on the given resources, reached with cfg (an
// emulator's when cfg.BaseEndpoint is set: S3 is then addressed by path).
// log nil discards.
func NewOn(ctx context.Context, c Config, r Resources, cfg aws.Config, log *slog.Logger) (*App, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return NewWith(ctx, r, awsenv.FromConfig(cfg), log, c)
}

// NewWith builds c's App on r, reached with clients. r is checked first
// (Resources.Check), then every Go agent (GoAgent), each error reported.
func NewWith(ctx context.Context, r Resources, clients *awsenv.Clients, log *slog.Logger, c Config) (*App, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	// The MCP client logs where the app does.
	c = c.mcpWithLog(log)
	built, err := c.agents()
	if err != nil {
		return nil, err
	}
	agentMap, err := loadAgents(ctx, r.AgentFile, clients, c, built)
	if err != nil {
		return nil, err
	}
	streamStore, err := StreamStore(r, clients.S3)
	if err != nil {
		return nil, err
	}
	interceptors := c.Interceptors
	var rec *metrics.Recorder
	if c.Metrics != nil {
		rec = metrics.Lambda(c.Metrics)
		interceptors = append(slices.Clip(interceptors), rec.Interceptor(prices(agentMap)))
	}
	waker := wake.NewSQS(clients.SQS, r.QueueURL)
	ss := session.New(dynamo.New(clients.DynamoDB, r.Table), streamStore)
	ss.Waker = waker
	ss.Log = log
	// Posts apply each agent's steering policy.
	ss.Steering = agentMap.Steering
	// Edits are checked against the tool's schema before they are written.
	ss.CheckInput = agentMap.CheckInput
	// Files live in the stream bucket under files/<session>/, so a
	// session's delete takes them; each agent says what it accepts.
	ss.Files = files.New(clients.S3, r.streamBucket(), s3.NewPresignClient(clients.S3))
	ss.FilePolicy = agentMap.FilePolicy
	ss = intercept.Store(ss, interceptors)
	// The claims broker shares the session table (a key space of its own).
	// The store withdraws the waiter of a blocked turn it ends.
	dynamoBroker := claimsdb.New(clients.DynamoDB, r.Table)
	dynamoBroker.Fate = turn.GrantFate(ss)
	dynamoBroker.Poll = r.ClaimsPoll
	broker := intercept.Claims(dynamoBroker, interceptors)
	ss.Claims = broker
	a := &App{
		Resources: r, Clients: clients, Sessions: ss, Agents: agentMap, Waker: waker, Log: log, Metrics: rec,
		Runner: &turn.Runner{Sessions: ss, Agents: agentMap, Waker: waker, Log: log, Interceptors: interceptors, Claims: broker,
			CallbackURL: r.CallbackURL, Build: r.Build},
	}
	if c.Lambda != nil && r.Function != "" {
		// A pinned turn is handed to the version it started on (pins.go).
		if vi, ok := c.Lambda(clients.Config).(VersionInvoker); ok {
			a.Runner.Pins = lambdaPins{inv: vi, function: r.Function, now: time.Now}
		}
	}
	a.mcpServer = c.MCPServer
	if _, err := a.mcpAgents(); err != nil {
		return nil, err
	}
	for _, f := range c.onBuild {
		f(a)
	}
	return a, nil
}

// StreamStore returns the store of turn streams on e's stream bucket, of
// its type: Express reads streams without listing order or StartAfter. An
// unknown type is refused with an error wrapping streams.ErrInvalid.
func StreamStore(e Resources, client *s3.Client) (*streams.Store, error) {
	bucket := e.streamBucket()
	t, err := streams.ParseBucketType(string(e.StreamBucketType), bucket)
	if err != nil {
		return nil, fmt.Errorf("app: stream bucket %s: %w", bucket, err)
	}
	return streams.NewOfType(client, bucket, t), nil
}

// OSLogger is the logger of a deployed function: the process
// environment's LOG_FORMAT, on standard error.
func OSLogger() *slog.Logger { return LoggerFromOS() }

// FromOS builds c's App from the process environment, the AWS region
// and credentials included (awsenv.FromEnv), as a Lambda function does.
func FromOS(ctx context.Context, c Config) (*App, error) {
	log := OSLogger()
	r, err := EnvFromOS()
	if err != nil {
		return nil, err
	}
	// A deployed function's credentials are in its environment; the SDK's
	// full chain (package awsenv/awsconfig) is not linked.
	clients, err := awsenv.FromEnv()
	if err != nil {
		return nil, err
	}
	return NewWith(ctx, r, clients, log, c)
}

// LoadAgents loads the agent file named by src: empty for the embedded
// demo, s3://bucket/key for an S3 object, else a file path.
func LoadAgents(ctx context.Context, src string, clients *awsenv.Clients) (turn.AgentMap, error) {
	return LoadAgentsWith(ctx, src, clients, Config{})
}

// LoadAgentsWith is LoadAgents with the program's Config: the file's
// agents may name c.Tools, and c's agents join them. An agent of c that
// shares a name with one of the file's, or another of c, is an error. A
// program with Go agents and no file (src empty) runs its agents only, not
// the demo.
func LoadAgentsWith(ctx context.Context, src string, clients *awsenv.Clients, c Config) (turn.AgentMap, error) {
	built, err := c.agents()
	if err != nil {
		return nil, err
	}
	return loadAgents(ctx, src, clients, c, built)
}

// loadAgents is LoadAgentsWith with c's Go agents built.
func loadAgents(ctx context.Context, src string, clients *awsenv.Clients, c Config, built []*turn.Agent) (turn.AgentMap, error) {
	out := turn.AgentMap{}
	if src != "" || len(built) == 0 {
		var err error
		if out, err = loadFile(ctx, src, clients, c); err != nil {
			return nil, err
		}
	}
	for _, a := range built {
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

func loadFile(ctx context.Context, src string, clients *awsenv.Clients, x Config) (turn.AgentMap, error) {
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
