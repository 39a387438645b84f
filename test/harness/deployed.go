package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/internal/auth/authtest"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/streams"
)

// DeployedAudience is the JWT audience of a deployed stack's issuer.
const DeployedAudience = "baton-app"

// Deployed is baton as template.yaml deploys it, modelled for a test: the
// real operator, resume and tick bootstraps under the harness's Lambda
// Runtime API, the operator behind a front door with Limits, a JWT issuer
// with a JWKS, fresh resources on the emulator, and a pump doing what the
// SQS event source mapping does for the resume function.
type Deployed struct {
	// URL is the front door's base URL (no trailing slash).
	URL string
	// Limits are the door's and the operator function's.
	Limits Limits
	// Issuer signs tokens; Token is the usual way to get one.
	Issuer *authtest.Issuer
	// Store reads the stack's facts and streams directly.
	Store     *session.Store
	Resources provision.Resources
	Emulator  *emulator.Emulator
	// Front, Operator and Resume are the running parts.
	Front    *Front
	Operator *Runtime
	Resume   *Runtime
	Tick     *Runtime
	// Env is the functions' environment.
	Env map[string]string
	// logs keep the functions' output, unless WithFunctionOutput sent it
	// elsewhere.
	logs *lockedBuffer
	// consumer, once set, is the resume function the pump delivers to
	// instead of Resume (Consume, versions.go).
	consumer atomic.Pointer[Runtime]
}

// Output is what the functions logged so far ("" when WithFunctionOutput
// sent it elsewhere).
func (d *Deployed) Output() string {
	if d.logs == nil {
		return ""
	}
	return d.logs.tail(1 << 30)
}

// DeployOption configures StartDeployed.
type DeployOption func(*deployConfig)

type deployConfig struct {
	agents string
	env    map[string]string
	output io.Writer
	issuer *authtest.Issuer
	pumps  int
}

// WithPollers delivers the wake queue with n pollers at once, each
// invoking the resume function with its own batches, as Lambda's event
// source mapping does (it starts with five); default one, so that
// deliveries are serial. A test whose turn waits on another turn's (an
// agent calling an agent over MCP) needs two or more.
func WithPollers(n int) DeployOption { return func(c *deployConfig) { c.pumps = n } }

// WithIssuer makes is the deployment's JWT issuer (started with
// DeployedAudience), so that a test mints tokens before the functions
// start, such as one an agent file's MCP server header reads from the
// environment; the test closes it. Default: a fresh issuer.
func WithIssuer(is *authtest.Issuer) DeployOption { return func(c *deployConfig) { c.issuer = is } }

// WithAgents sets BATON_AGENTS, an agent file's absolute path ("" is the
// embedded demo agent).
func WithAgents(path string) DeployOption { return func(c *deployConfig) { c.agents = path } }

// WithEnv adds variables to every function's environment, such as
// BATON_CHAT_ORIGINS or BATON_CHAT_AGENT.
func WithEnv(env map[string]string) DeployOption {
	return func(c *deployConfig) { maps.Copy(c.env, env) }
}

// WithFunctionOutput sends the functions' logs to w (default: kept, and
// shown only when the test fails).
func WithFunctionOutput(w io.Writer) DeployOption { return func(c *deployConfig) { c.output = w } }

// StartDeployed starts a deployed stack for t with the door and limits l
// (AWSLimits().Scaled(0.01) for a short test; HTTPAPILimits() for the
// buffered door the stack had before) and stops it when t ends.
func StartDeployed(t testing.TB, l Limits, opts ...DeployOption) *Deployed {
	t.Helper()
	c := deployConfig{env: map[string]string{}}
	for _, o := range opts {
		o(&c)
	}
	boots := deployedBootstraps(t)
	emu := testenv.Emulator()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fresh, err := testenv.Provision(ctx, emu, nil)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	is := c.issuer
	if is == nil {
		if is, err = authtest.Start(DeployedAudience); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(is.Close)
	}
	res := fresh.Resources
	d := &Deployed{
		Limits: l, Issuer: is, Resources: res, Emulator: emu,
		Store: session.New(dynamo.New(emu.Clients.DynamoDB, res.Table), streams.New(emu.Clients.S3, res.Bucket)),
		Env: map[string]string{
			"BATON_TABLE": res.Table, "BATON_BUCKET": res.Bucket, "BATON_QUEUE_URL": res.QueueURL,
			"BATON_AGENTS": c.agents, "BATON_WAKE_GRACE": "1s", "LOG_FORMAT": "json",
			"BATON_JWT_ISSUER": is.URL, "BATON_JWT_AUDIENCE": DeployedAudience,
			"BATON_HOLD": l.Hold.String(), "AWS_ENDPOINT_URL": emu.URL,
		},
	}
	// The front door's address is known before it serves: the functions'
	// callback URLs are under it.
	srv := httptest.NewUnstartedServer(nil)
	t.Cleanup(srv.Close)
	d.URL = "http://" + srv.Listener.Addr().String()
	d.Env["BATON_CALLBACK_URL"] = d.URL
	maps.Copy(d.Env, c.env)
	out := c.output
	if out == nil {
		lb := &lockedBuffer{}
		out, d.logs = lb, lb
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("--- deployed functions' output ---\n%s", lb.tail(200))
			}
		})
	}
	start := func(role string, timeout time.Duration) *Runtime {
		rt, err := StartRuntime(RuntimeConfig{Name: role, Bootstrap: boots[role], Env: d.Env, Timeout: timeout, Output: out})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rt.Close)
		return rt
	}
	d.Operator = start("operator", l.Timeout)
	d.Resume = start("resume", 30*time.Second)
	d.Tick = start("tick", 60*time.Second)
	domain := "abcdefghijklmnop.lambda-url." + Region + ".on.aws"
	if l.Door == BufferedHTTPAPI {
		domain = "abcdefghij.execute-api." + Region + ".amazonaws.com"
	}
	d.Front = &Front{Limits: l, Runtime: d.Operator, DomainName: domain}
	srv.Config.Handler = d.Front
	srv.Start()
	pctx, pcancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	var pumps sync.WaitGroup
	for range max(c.pumps, 1) {
		pumps.Go(func() { d.pump(pctx, t) })
	}
	go func() { pumps.Wait(); close(stopped) }()
	t.Cleanup(func() { pcancel(); <-stopped })
	return d
}

// Token returns a valid bearer token for sub (without "Bearer ").
func (d *Deployed) Token(sub string) string { return d.Issuer.Token(sub) }

// FireTick invokes the tick function once, as its schedule would.
func (d *Deployed) FireTick(ctx context.Context) error {
	ev, err := ScheduledEvent("arn:aws:events:"+Region+":"+Account+":rule/tick", Region, time.Now())
	if err != nil {
		return err
	}
	res, err := d.Tick.Invoke(ctx, ev)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if fe := res.FunctionError(); fe != "" {
		return fmt.Errorf("harness: tick failed: %s", fe)
	}
	return nil
}

// pump delivers the wake queue to the resume function as SQS events,
// deleting what it handled, as Lambda's event source mapping does.
func (d *Deployed) pump(ctx context.Context, t testing.TB) {
	c := d.Emulator.Clients.SQS
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(d.Resources.QueueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return
	}
	arn := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(d.Resources.QueueURL), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil || len(out.Messages) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		failed, err := d.deliver(ctx, out.Messages, arn)
		if err != nil {
			continue // redelivered after the visibility timeout
		}
		for _, m := range out.Messages {
			if !failed[aws.ToString(m.MessageId)] {
				_, _ = c.DeleteMessage(context.WithoutCancel(ctx), &sqs.DeleteMessageInput{QueueUrl: aws.String(d.Resources.QueueURL), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}
}

func (d *Deployed) deliver(ctx context.Context, msgs []sqstypes.Message, arn string) (map[string]bool, error) {
	payload, err := json.Marshal(SQSEvent(msgs, arn, Region))
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	res, err := d.resume().Invoke(ictx, payload)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.FunctionError() != "" {
		return nil, fmt.Errorf("harness: resume failed: %s", b)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, err
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	return failed, nil
}

var (
	deployBuildOnce sync.Once
	deployBoots     map[string]string
	deployBuildErr  error
)

// deployedBootstraps builds functions/operator, resume and tick once per
// test binary, into a directory removed at exit of the process's temp dir.
func deployedBootstraps(t testing.TB) map[string]string {
	t.Helper()
	deployBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "baton-deployed-")
		if err != nil {
			deployBuildErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		deployBoots = map[string]string{}
		for _, role := range []string{"operator", "resume", "tick"} {
			sub := filepath.Join(dir, role)
			if err := os.MkdirAll(sub, 0o755); err != nil {
				deployBuildErr = err
				return
			}
			p, err := BuildBootstrap(ctx, "./functions/"+role, sub)
			if err != nil {
				deployBuildErr = err
				return
			}
			deployBoots[role] = p
		}
	})
	if deployBuildErr != nil {
		t.Fatalf("harness: build bootstraps: %v", deployBuildErr)
	}
	return deployBoots
}

// lockedBuffer collects the functions' output.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) tail(lines int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, i := 0, len(l.b)
	for i > 0 && n <= lines {
		i--
		if l.b[i] == '\n' {
			n++
		}
	}
	return string(l.b[i:])
}
