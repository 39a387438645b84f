// Package harness runs real Lambda bootstrap binaries against kumo, the AWS
// emulator used by baton's tests.
//
// kumo does not execute function code. CreateFunction only records the
// function (the zip is stored, never unpacked or run); an invocation is handed
// to whatever process long-polls kumo's Runtime API for that function name at
// /_runtime/{name}/2018-06-01/runtime/invocation/next. This package starts
// that process itself: StartFunction registers the function, starts the
// bootstrap with AWS_LAMBDA_RUNTIME_API=<proxy>/_runtime/{name} and waits for
// its first poll, after which Invoke goes through the ordinary Lambda Invoke
// API.
//
// Between the process and kumo sits a small reverse proxy owned by the
// Function. It records when the first GET .../invocation/next arrives (the
// readiness signal and the cold-start measurement) and otherwise forwards
// every Runtime API request to kumo unchanged.
package harness

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// Region is the region the harness's clients and functions use.
const Region = "us-east-1"

// Role is the execution role given to functions. kumo requires a Role on
// CreateFunction but never checks it.
const Role = "arn:aws:iam::000000000000:role/baton-test"

// ErrExited reports that the function's process is not running: it exited
// (or was killed) before or during an invocation.
var ErrExited = errors.New("harness: function process exited")

// exitGrace is how long Invoke still waits for kumo's answer after the
// process died mid-invocation, so that a response posted just before the
// exit wins over ErrExited.
const exitGrace = 200 * time.Millisecond

// registrationSettle is how long StartFunction waits after seeing the first
// poll: kumo registers the poller a millisecond or two after the proxy
// forwards it, and an Invoke that arrives before that gets a 502.
const registrationSettle = 25 * time.Millisecond

// noHandlerRetry bounds how long Invoke retries kumo's "function has no
// runtime handler" 502 (see Function.invoke).
const noHandlerRetry = 2 * time.Second

// BuildBootstrap builds the main package pkg into dir/bootstrap the way a
// provided.al2023 Lambda is built: -tags lambda.norpc, CGO_ENABLED=0,
// -ldflags "-s -w", for the host's GOOS/GOARCH. A relative pkg
// ("./functions/resume") is resolved against the root of the main module
// (the directory holding the go.mod that governs the working directory); an
// import path works as well. It returns the binary's path.
func BuildBootstrap(ctx context.Context, pkg, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	out, err := filepath.Abs(filepath.Join(dir, "bootstrap"))
	if err != nil {
		return "", fmt.Errorf("harness: build %s: %w", pkg, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("harness: go build %s: %w\n%s", pkg, err, msg)
	}
	return out, nil
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("harness: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("harness: not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// LambdaClient returns a Lambda client for the kumo endpoint with static test
// credentials and retries disabled (kumo's 502 for "no runtime handler" would
// otherwise be retried by the SDK's default retryer).
func LambdaClient(endpoint string) *lambda.Client {
	return lambda.NewFromConfig(awsConfig(endpoint))
}

func awsConfig(endpoint string) aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
		Retryer:      func() aws.Retryer { return aws.NopRetryer{} },
	}
}

// Option configures StartFunction.
type Option func(*options)

type options struct {
	timeout time.Duration
	output  io.Writer
}

// WithTimeout sets the function's Timeout (rounded up to whole seconds, as
// Lambda only has second granularity; default 3s, kumo's and Lambda's
// default). kumo hands the process a deadline this far from the moment it
// picks an invocation up, and answers a picked-up invocation that gets no
// response within it with a Sandbox.Timedout function error.
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithOutput sends the process's stdout and stderr to w (default: the test
// process's stderr).
func WithOutput(w io.Writer) Option {
	return func(o *options) { o.output = w }
}

// Function is a bootstrap process registered with kumo and polling its
// Runtime API.
type Function struct {
	// Name and ARN identify the function in kumo.
	Name string
	ARN  string
	// RuntimeAPI is the AWS_LAMBDA_RUNTIME_API value the process got:
	// 127.0.0.1:<proxy port>/_runtime/<Name>.
	RuntimeAPI string

	client  *lambda.Client
	cmd     *exec.Cmd
	proxy   *httptest.Server
	started time.Time

	readyOnce sync.Once
	ready     chan struct{}
	firstPoll time.Time // written before ready is closed

	exited  chan struct{}
	waitErr error // written before exited is closed

	stopOnce sync.Once
	stopErr  error
}

// StartFunction registers name in the kumo at endpoint (CreateFunction, or
// UpdateFunctionConfiguration when it already exists, so a function can be
// restarted under the same name), starts bootstrapPath with the Lambda
// environment and waits until the process polls for its first invocation.
//
// The process gets a clean environment, not the test's: PATH, the Lambda
// variables (AWS_LAMBDA_RUNTIME_API, AWS_LAMBDA_FUNCTION_NAME,
// AWS_LAMBDA_FUNCTION_VERSION, AWS_LAMBDA_FUNCTION_MEMORY_SIZE, _HANDLER,
// LAMBDA_TASK_ROOT, AWS_REGION, AWS_DEFAULT_REGION), AWS_ENDPOINT_URL=endpoint
// and test credentials, then env, which overrides any of them except
// AWS_LAMBDA_RUNTIME_API. kumo itself passes nothing to the process; env is
// also stored as the function's Environment so GetFunctionConfiguration
// shows it.
//
// ctx bounds registration and startup only; the process runs until Kill or
// Stop. Call Stop when done, also after Kill.
func StartFunction(ctx context.Context, endpoint, name, bootstrapPath string, env map[string]string, opts ...Option) (*Function, error) {
	o := options{timeout: 3 * time.Second, output: os.Stderr}
	for _, opt := range opts {
		opt(&o)
	}
	timeoutSec := int32((o.timeout + time.Second - 1) / time.Second)
	if timeoutSec < 1 {
		timeoutSec = 1
	}
	bootstrapPath, err := filepath.Abs(bootstrapPath)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	target, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("harness: endpoint %q: %w", endpoint, err)
	}

	f := &Function{
		Name:   name,
		client: LambdaClient(endpoint),
		ready:  make(chan struct{}),
		exited: make(chan struct{}),
	}
	if f.ARN, err = f.register(ctx, env, timeoutSec); err != nil {
		return nil, err
	}

	f.proxy = f.runtimeProxy(target)
	f.RuntimeAPI = f.proxy.Listener.Addr().String() + "/_runtime/" + name

	procEnv := processEnv(endpoint, name, bootstrapPath, f.RuntimeAPI, env)

	f.cmd = exec.Command(bootstrapPath)
	f.cmd.Dir = filepath.Dir(bootstrapPath)
	f.cmd.Env = envList(procEnv)
	f.cmd.Stdout = o.output
	f.cmd.Stderr = o.output
	f.started = time.Now()
	if err := f.cmd.Start(); err != nil {
		f.proxy.Close()
		return nil, fmt.Errorf("harness: start %s: %w", bootstrapPath, err)
	}
	go func() {
		f.waitErr = f.cmd.Wait()
		close(f.exited)
	}()

	select {
	case <-f.ready:
		// The poll reached the proxy; give kumo a moment to take it in
		// before callers invoke through their own clients (Invoke also
		// retries, see Function.invoke).
		time.Sleep(registrationSettle)
		return f, nil
	case <-f.exited:
		_ = f.Stop()
		return nil, fmt.Errorf("%w before its first poll: %v", ErrExited, f.waitErr)
	case <-ctx.Done():
		_ = f.Stop()
		return nil, fmt.Errorf("harness: waiting for %s to poll: %w", name, ctx.Err())
	}
}

// runtimeProxy forwards the process's Runtime API calls to target, and
// closes f.ready at its first poll for an invocation.
func (f *Function) runtimeProxy(target *url.URL) *httptest.Server {
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		// The process went away mid-poll; nobody reads this answer.
		w.WriteHeader(http.StatusBadGateway)
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/runtime/invocation/next") {
			f.readyOnce.Do(func() {
				f.firstPoll = time.Now()
				close(f.ready)
			})
		}
		rp.ServeHTTP(w, r)
	}))
}

// processEnv is a function process's environment: Lambda's own variables,
// the emulator's endpoint and credentials, then env, then the Runtime API.
func processEnv(endpoint, name, bootstrapPath, runtimeAPI string, env map[string]string) map[string]string {
	procEnv := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"AWS_LAMBDA_FUNCTION_NAME":        name,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                filepath.Dir(bootstrapPath),
		"AWS_REGION":                      Region,
		"AWS_DEFAULT_REGION":              Region,
		"AWS_ENDPOINT_URL":                endpoint,
		"AWS_ACCESS_KEY_ID":               "test",
		"AWS_SECRET_ACCESS_KEY":           "test",
	}
	for k, v := range env {
		procEnv[k] = v
	}
	procEnv["AWS_LAMBDA_RUNTIME_API"] = runtimeAPI
	return procEnv
}

func (f *Function) register(ctx context.Context, env map[string]string, timeoutSec int32) (string, error) {
	var environment *lambdatypes.Environment
	if len(env) > 0 {
		environment = &lambdatypes.Environment{Variables: env}
	}
	out, err := f.client.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName:  aws.String(f.Name),
		Role:          aws.String(Role),
		Runtime:       lambdatypes.RuntimeProvidedal2023,
		Handler:       aws.String("bootstrap"),
		Architectures: []lambdatypes.Architecture{lambdatypes.ArchitectureX8664},
		Code:          &lambdatypes.FunctionCode{ZipFile: placeholderZip()},
		Timeout:       aws.Int32(timeoutSec),
		Environment:   environment,
	})
	if err == nil {
		return aws.ToString(out.FunctionArn), nil
	}
	var conflict *lambdatypes.ResourceConflictException
	if !errors.As(err, &conflict) {
		return "", fmt.Errorf("harness: CreateFunction %s: %w", f.Name, err)
	}
	if environment == nil {
		environment = &lambdatypes.Environment{Variables: map[string]string{}}
	}
	upd, err := f.client.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{
		FunctionName: aws.String(f.Name),
		Timeout:      aws.Int32(timeoutSec),
		Environment:  environment,
	})
	if err != nil {
		return "", fmt.Errorf("harness: UpdateFunctionConfiguration %s: %w", f.Name, err)
	}
	return aws.ToString(upd.FunctionArn), nil
}

// placeholderZip is the deployment package sent with CreateFunction. kumo
// stores it (CodeSize, CodeSha256) but never unpacks or runs it.
func placeholderZip() []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("bootstrap")
	_, _ = io.WriteString(w, "#!/bin/sh\n# run by the baton test harness, not by kumo\n")
	_ = zw.Close()
	return buf.Bytes()
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// StartupLatency is the time from starting the process to its first GET
// .../invocation/next reaching the harness's proxy.
func (f *Function) StartupLatency() time.Duration {
	return f.firstPoll.Sub(f.started)
}

// Client is the Lambda client the Function invokes through.
func (f *Function) Client() *lambda.Client { return f.client }

// Exited is closed once the process has exited.
func (f *Function) Exited() <-chan struct{} { return f.exited }

// FunctionError is a failed invocation as Lambda reports it: HTTP 200 with
// X-Amz-Function-Error set and an error document as the payload. kumo sets
// Kind "Unhandled" both for errors the runtime posted to .../error and for
// its own Sandbox.Timedout answer.
type FunctionError struct {
	Kind    string // X-Amz-Function-Error
	Type    string // errorType of the payload
	Message string // errorMessage of the payload
	Payload []byte
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function error (%s) %s: %s", e.Kind, e.Type, e.Message)
}

// Invoke calls the function synchronously through the Lambda Invoke API
// (RequestResponse) and returns its payload. A failed function yields its
// payload and a *FunctionError. If the process is not running, or dies during
// the call, Invoke returns an error wrapping ErrExited instead of waiting for
// kumo, which would only answer after the function's timeout (see
// WithTimeout). Errors from kumo itself come back as the SDK's errors.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	select {
	case <-f.exited:
		return nil, f.exitError("before invocation")
	default:
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-f.exited:
			select {
			case <-time.After(exitGrace):
				cancel(ErrExited)
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()

	out, err := f.invoke(ctx, payload)
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrExited) {
			return nil, f.exitError("during invocation")
		}
		return nil, fmt.Errorf("harness: invoke %s: %w", f.Name, err)
	}
	if out.FunctionError != nil {
		fe := &FunctionError{Kind: aws.ToString(out.FunctionError), Payload: out.Payload}
		var doc struct {
			Type    string `json:"errorType"`
			Message string `json:"errorMessage"`
		}
		if json.Unmarshal(out.Payload, &doc) == nil {
			fe.Type, fe.Message = doc.Type, doc.Message
		}
		return out.Payload, fe
	}
	return out.Payload, nil
}

// invoke calls the Invoke API, retrying kumo's "has no runtime handler"
// answer for up to noHandlerRetry. kumo routes an invocation to the Runtime
// API only once a GET .../next for the function has reached its handler; the
// harness sees that poll in its proxy a moment earlier, so the first Invoke
// can race it.
func (f *Function) invoke(ctx context.Context, payload []byte) (*lambda.InvokeOutput, error) {
	deadline := time.Now().Add(noHandlerRetry)
	for {
		out, err := f.client.Invoke(ctx, &lambda.InvokeInput{
			FunctionName:   aws.String(f.Name),
			InvocationType: lambdatypes.InvocationTypeRequestResponse,
			Payload:        payload,
		})
		var se *lambdatypes.ServiceException
		if err == nil || !errors.As(err, &se) || !strings.Contains(se.ErrorMessage(), "has no runtime handler") || time.Now().After(deadline) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (f *Function) exitError(when string) error {
	return fmt.Errorf("%w %s (%s): %v", ErrExited, when, f.Name, f.waitErr)
}

// Kill sends SIGKILL to the process and waits for it to exit. The proxy stays
// up; call Stop to release it.
func (f *Function) Kill() error {
	select {
	case <-f.exited:
		return nil
	default:
	}
	if err := f.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("harness: kill %s: %w", f.Name, err)
	}
	<-f.exited
	return nil
}

// Stop ends the process (SIGTERM, then SIGKILL after 2s) and closes the
// proxy. It is idempotent and safe after Kill. The function stays registered
// in kumo, so StartFunction can start it again under the same name.
func (f *Function) Stop() error {
	f.stopOnce.Do(func() {
		select {
		case <-f.exited:
		default:
			if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
				f.stopErr = fmt.Errorf("harness: stop %s: %w", f.Name, err)
			}
			select {
			case <-f.exited:
			case <-time.After(2 * time.Second):
				_ = f.cmd.Process.Signal(syscall.SIGKILL)
				<-f.exited
			}
		}
		f.proxy.Close()
	})
	return f.stopErr
}
