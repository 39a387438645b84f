package app

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/agentspec"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/mcpserve"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// Config is what a program brings to baton: its agents, and the Go tools
// the agent file's agents (BATON_AGENTS) may name. Package host re-exports
// it (host.Config).
type Config struct {
	// Agents are the program's agents; New checks and builds each.
	Agents []baton.Agent
	// Tools may be named by the agent file's agents, as built-ins are.
	Tools []baton.Tool
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
	MCP mcp.Dialer
	// MCPServer serves the agents over MCP at /mcp (BATON_MCP_AGENTS
	// chooses which): providers.MCPServer() is baton's, on the official
	// MCP Go SDK. Only a program that sets it links that SDK: the
	// operator function and the dev server; without one, /mcp answers
	// 501.
	MCPServer mcpserve.Server
	// Lambda invokes the agent file's lambda tools: providers.Lambda() is
	// baton's, on the AWS SDK's Lambda client. Only a program that sets it
	// links that client; a function that runs no tool (the operator, the
	// tick) sets none. Without one, a call of a lambda tool fails its turn.
	// baton's also hands a turn pinned to another version of the resume
	// function to that version (pins.go); without it, such a turn is
	// treated as if its version were gone.
	Lambda Lambda
	// Interceptors wrap every model call, tool call, step and store call,
	// the first outermost: the seam for tracing and metrics (see
	// host.Interceptor). None adds nothing to the hot path.
	Interceptors []intercept.Interceptor
	// KeyStore is where agents' model keys named by secret are fetched
	// from (an agent's apiKeySecret, or BATON_<PROVIDER>_KEY_SECRET, which
	// template.yaml sets from AnthropicKeySecret and OpenAIKeySecret):
	// providers.KeyStore() reads Secrets Manager and SSM Parameter Store.
	// Each key is fetched once per App, on first use, and again when its
	// provider refuses it. Only a program that sets it links those
	// clients; a function that runs no model sets none.
	KeyStore KeyStore
	// Metrics, when set, receives the App's metrics as CloudWatch Embedded
	// Metric Format lines: a Lambda main passes os.Stderr, where its logger
	// writes, and CloudWatch Logs extracts them, with no API call. Their
	// Function dimension is AWS_LAMBDA_FUNCTION_NAME ("local" outside
	// Lambda). Nil records none, at no cost.
	Metrics io.Writer

	// built are agents already made for the runner (WithAgents).
	built []*turn.Agent
	// onBuild are called with the App once it is built (OnBuild).
	onBuild []func(*App)
}

// WithAgents returns c with agents made for the runner besides c.Agents,
// for baton's own tests of the engine.
func WithAgents(c Config, agents ...*turn.Agent) Config {
	c.built = append(slices.Clip(c.built), agents...)
	return c
}

// OnBuild returns c with f called with the App built from it, before New
// or NewOn returns: how batontest and baton's own tests reach the engine
// under a host.App.
func OnBuild(c Config, f func(*App)) Config {
	c.onBuild = append(slices.Clip(c.onBuild), f)
	return c
}

// Check checks c's Go agents as New does, without building an App: it
// reaches neither AWS nor their MCP servers. Every problem is reported,
// each a *baton.AgentError naming the agent and the field, joined.
func (c Config) Check() error {
	_, err := c.agents()
	return err
}

// agents checks and builds c's Go agents, with their MCP servers reached
// through c.MCP; every agent's errors are reported, each an
// *baton.AgentError.
func (c Config) agents() ([]*turn.Agent, error) {
	out := slices.Clone(c.built)
	var errs []error
	for _, a := range c.Agents {
		t, err := GoAgent(a, c.MCP)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, t)
	}
	return out, errors.Join(errs...)
}

// GoAgent checks a (agentspec.Check) and makes what the runner runs. It
// does not reach the MCP servers, which d reaches when a turn starts: a
// turn lists their allowed tools then and offers that list for the rest
// of the turn. Every problem is reported, each an *baton.AgentError,
// joined.
func GoAgent(a baton.Agent, d mcp.Dialer) (*turn.Agent, error) {
	var errs []error
	reg, remote := agentspec.Check(a, d, func(field string, err error) {
		errs = append(errs, &baton.AgentError{Agent: a.Name, Field: field, Err: err})
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &turn.Agent{Name: a.Name, System: a.System, Model: a.Model, Tools: reg, Remote: remote,
		MaxTokens: a.MaxOutputTokens, MaxToolOutput: a.MaxToolOutput, Limits: a.Limits, Price: a.Price,
		Compaction: a.Compaction, Steering: a.Steering, Children: a.Children, Guardrails: a.Guardrails,
		OnChange: a.OnChange, Files: a.Files}, nil
}

// Resources are what an App runs on: the resources template.yaml creates
// and the settings it gives the functions. A deployed function reads them
// from its environment (EnvFrom); a program that makes its own resources
// (the dev server, batontest) sets them. Package host re-exports them
// (host.Resources).
type Resources struct {
	// Table, Bucket and QueueURL are the sessions table, the bucket and
	// the wake queue; all three are required (BATON_TABLE, BATON_BUCKET,
	// BATON_QUEUE_URL).
	Table, Bucket, QueueURL string
	// StreamBucket holds turn streams and snapshots (Bucket when empty);
	// StreamBucketType is streams.Standard (the default) or
	// streams.Express, an S3 Express One Zone directory bucket, whose
	// name (…--x-s3) says so too (BATON_STREAM_BUCKET,
	// BATON_STREAM_BUCKET_TYPE).
	StreamBucket     string
	StreamBucketType streams.BucketType
	// AgentFile is an agent file whose agents run besides the Config's: a
	// path, an s3://bucket/key URL, or empty for none (the embedded demo
	// agent when the Config brings no agents) (BATON_AGENTS).
	AgentFile string
	// WakeGrace is how long the tick waits for a wake to resume a turn
	// before it counts the wake as lost and sends another; zero means the
	// tick's default (BATON_WAKE_GRACE).
	WakeGrace time.Duration
	// Hold is how long the operator function holds a chat response or a
	// turn stream open before it ends it at a position the client resumes
	// from; it must end before the function's timeout. Zero means the
	// chat's default (BATON_HOLD).
	Hold time.Duration
	// ChatAgent is the agent of chats whose request names none; ChatOrigins
	// are the browser origins CORS lets call the chat endpoint ("*" for
	// any), none when empty (BATON_CHAT_AGENT, BATON_CHAT_ORIGINS).
	ChatAgent   string
	ChatOrigins []string
	// JWTIssuer and JWTAudience are the iss and aud (or client_id) the
	// operator function requires of every caller's bearer JWT; JWKSURL is
	// where the issuer's keys are (empty: discovered from the issuer's
	// /.well-known/openid-configuration) (BATON_JWT_ISSUER,
	// BATON_JWT_AUDIENCE, BATON_JWKS_URL).
	JWTIssuer, JWTAudience, JWKSURL string
	// RetentionDays is how many days an idle session is kept before the
	// daily retention sweep deletes it; 0 keeps every session. At most
	// MaxRetentionDays (BATON_RETENTION_DAYS).
	RetentionDays int
	// ClaimsPoll is how long a turn blocked on resource claims waits
	// before it asks the broker again without a release's wake; zero means
	// claims.DefaultPoll (BATON_CLAIMS_POLL).
	ClaimsPoll time.Duration
	// CallbackURL is the operator API's public URL, under which tools
	// that complete by callback get their URLs (/callbacks/{token}); empty
	// hands out tokens without URLs (BATON_CALLBACK_URL).
	CallbackURL string
	// MCPAgents chooses the agents served as MCP tools at /mcp: agent
	// names, comma-separated, or "*" for all; empty serves none
	// (BATON_MCP_AGENTS).
	MCPAgents string
	// Build names the code each turn's invocation records with its
	// agent's fingerprint: the Lambda function's version
	// (AWS_LAMBDA_FUNCTION_VERSION, which Lambda sets: "$LATEST" or a
	// published version's number); empty records "local".
	Build string
	// Function is the Lambda function's name (AWS_LAMBDA_FUNCTION_NAME,
	// which Lambda sets): a turn pinned to another of its versions is
	// handed to that version (pins.go).
	Function string
}

// Check reports what is wrong with r, naming each field and its variable:
// a missing table, bucket or queue, a negative duration, an unknown stream
// bucket type, a retention out of range, a claims poll at or past the
// waiter TTL.
func (r Resources) Check() error {
	var missing []string
	for _, f := range []struct{ name, v string }{{EnvTable, r.Table}, {EnvBucket, r.Bucket}, {EnvQueueURL, r.QueueURL}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("app: not set: %s", strings.Join(missing, ", "))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{EnvWakeGrace, r.WakeGrace}, {EnvHold, r.Hold}, {EnvClaimsPoll, r.ClaimsPoll}} {
		if d.v < 0 {
			return fmt.Errorf("app: %s %s: want a positive Go duration", d.name, d.v)
		}
	}
	if _, err := streams.ParseBucketType(string(r.StreamBucketType), r.streamBucket()); err != nil {
		return fmt.Errorf("app: %s: %w", EnvStreamBucketType, err)
	}
	if r.RetentionDays < 0 || r.RetentionDays > MaxRetentionDays {
		return fmt.Errorf("app: %s %d: want a whole number of days from 0 (keep every session) to %d", EnvRetentionDays, r.RetentionDays, MaxRetentionDays)
	}
	if r.ClaimsPoll >= claims.DefaultWaiterTTL {
		return fmt.Errorf("app: %s %s: want a positive Go duration below the waiter TTL (%s)", EnvClaimsPoll, r.ClaimsPoll, claims.DefaultWaiterTTL)
	}
	return nil
}

// streamBucket is the bucket of turn streams: StreamBucket, else Bucket.
func (r Resources) streamBucket() string {
	if r.StreamBucket != "" {
		return r.StreamBucket
	}
	return r.Bucket
}

// Retention is how long an idle session is kept (RetentionDays); zero
// keeps every one.
func (r Resources) Retention() time.Duration { return time.Duration(r.RetentionDays) * 24 * time.Hour }

// mcpWithLog is c with its MCP client logging to log (mcp.WithLog).
func (c Config) mcpWithLog(log *slog.Logger) Config {
	c.MCP = mcp.WithLog(c.MCP, log)
	return c
}
