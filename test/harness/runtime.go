package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Runtime is a Lambda Runtime API (2018-06-01) for one function, run by
// the harness itself because kumo's reads a response whole: it supports the
// streaming response mode, in which the runtime POSTs the response as a
// chunked body (aws-lambda-go does for a handler answering an io.Reader)
// and the caller of Invoke reads it as it arrives. Like Lambda, it runs one
// invocation per process at a time and starts another process of the
// bootstrap when every running one is busy, up to a maximum.
type Runtime struct {
	name, bootstrap string
	env             map[string]string
	timeout         time.Duration
	maxProcs        int
	output          io.Writer

	srv   *httptest.Server
	queue chan *invocation

	mu      sync.Mutex
	pending map[string]*invocation
	procs   []*exec.Cmd
	idle    int
	closed  bool

	seq atomic.Int64
	// Invocations counts invocations handed to a process.
	Invocations atomic.Int64
}

// invocation is one event waiting for, or being handled by, a process.
type invocation struct {
	id       string
	event    []byte
	deadline time.Time
	result   chan *Result
}

// Result is a function's answer as it arrives.
type Result struct {
	// ContentType is the runtime's Content-Type:
	// "application/vnd.awslambda.http-integration-response" for a streamed
	// HTTP answer (a JSON prelude, eight NUL bytes, then the body).
	ContentType string
	// Body is the response, read as the function sends it. Close it when
	// done: an unread rest is drained so the function can finish.
	Body io.ReadCloser
	// FunctionError is set when the function failed (a POST to .../error,
	// or an error trailer at the end of a stream, known once Body is read
	// to its end).
	FunctionError func() string
}

// RuntimeConfig configures StartRuntime.
type RuntimeConfig struct {
	Name      string
	Bootstrap string
	// Env is the process environment besides the Lambda variables.
	Env map[string]string
	// Timeout is the function's Timeout: the deadline each invocation gets.
	Timeout time.Duration
	// MaxProcs bounds the concurrent execution environments; default 8.
	MaxProcs int
	// Output receives the processes' stdout and stderr; default os.Stderr.
	Output io.Writer
}

// StartRuntime starts the Runtime API server and one process of the
// bootstrap. Close stops both.
func StartRuntime(c RuntimeConfig) (*Runtime, error) {
	rt := &Runtime{
		name: c.Name, bootstrap: c.Bootstrap, env: c.Env, timeout: c.Timeout, maxProcs: c.MaxProcs, output: c.Output,
		queue: make(chan *invocation), pending: map[string]*invocation{},
	}
	if rt.timeout <= 0 {
		rt.timeout = 3 * time.Second
	}
	if rt.maxProcs <= 0 {
		rt.maxProcs = 8
	}
	if rt.output == nil {
		rt.output = os.Stderr
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", rt.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", rt.respond)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", rt.fail)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(rt.output, "harness: %s init error: %s\n", rt.name, b)
		w.WriteHeader(http.StatusAccepted)
	})
	rt.srv = httptest.NewServer(mux)
	rt.mu.Lock()
	err := rt.spawnLocked()
	rt.mu.Unlock()
	if err != nil {
		rt.srv.Close()
		return nil, err
	}
	return rt, nil
}

// spawnLocked starts one more process; rt.mu is held.
func (rt *Runtime) spawnLocked() error {
	abs, err := filepath.Abs(rt.bootstrap)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	env := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"AWS_LAMBDA_FUNCTION_NAME":        rt.name,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                filepath.Dir(abs),
		"AWS_REGION":                      Region,
		"AWS_DEFAULT_REGION":              Region,
		"AWS_ACCESS_KEY_ID":               "test",
		"AWS_SECRET_ACCESS_KEY":           "test",
	}
	for k, v := range rt.env {
		env[k] = v
	}
	env["AWS_LAMBDA_RUNTIME_API"] = rt.srv.Listener.Addr().String()
	cmd := exec.Command(abs)
	cmd.Dir = filepath.Dir(abs)
	cmd.Env = envList(env)
	cmd.Stdout, cmd.Stderr = rt.output, rt.output
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("harness: start %s: %w", abs, err)
	}
	go func() { _ = cmd.Wait() }()
	rt.procs = append(rt.procs, cmd)
	return nil
}

// Procs is how many processes (execution environments) were started.
func (rt *Runtime) Procs() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.procs)
}

// Invoke hands event to a process and returns its answer once the
// function starts sending it. ctx bounds the wait for that start only.
func (rt *Runtime) Invoke(ctx context.Context, event []byte) (*Result, error) {
	inv := &invocation{
		id:       "req-" + strconv.FormatInt(rt.seq.Add(1), 10),
		event:    event,
		deadline: time.Now().Add(rt.timeout),
		result:   make(chan *Result, 1),
	}
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, errors.New("harness: runtime closed")
	}
	if rt.idle == 0 && len(rt.procs) < rt.maxProcs {
		if err := rt.spawnLocked(); err != nil {
			rt.mu.Unlock()
			return nil, err
		}
	}
	rt.pending[inv.id] = inv
	rt.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		delete(rt.pending, inv.id)
		rt.mu.Unlock()
	}()
	select {
	case rt.queue <- inv:
	case <-ctx.Done():
		return nil, fmt.Errorf("harness: %s: no process took the invocation: %w", rt.name, ctx.Err())
	}
	select {
	case res := <-inv.result:
		return res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("harness: %s: no answer: %w", rt.name, ctx.Err())
	}
}

func (rt *Runtime) next(w http.ResponseWriter, r *http.Request) {
	rt.mu.Lock()
	rt.idle++
	rt.mu.Unlock()
	var inv *invocation
	select {
	case inv = <-rt.queue:
	case <-r.Context().Done():
	}
	rt.mu.Lock()
	rt.idle--
	rt.mu.Unlock()
	if inv == nil {
		return
	}
	rt.Invocations.Add(1)
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:"+Region+":"+Account+":function:"+rt.name)
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(inv.event)
}

func (rt *Runtime) lookup(id string) *invocation {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.pending[id]
}

// respond streams the runtime's response body to the invoker, and answers
// the runtime once the body is read (or abandoned and drained).
func (rt *Runtime) respond(w http.ResponseWriter, r *http.Request) {
	inv := rt.lookup(r.PathValue("id"))
	if inv == nil {
		http.Error(w, "unknown request id", http.StatusBadRequest)
		return
	}
	done := make(chan struct{})
	body := &resultBody{r: r.Body, done: done}
	inv.result <- &Result{
		ContentType: r.Header.Get("Content-Type"),
		Body:        body,
		FunctionError: func() string {
			<-done
			return r.Trailer.Get("Lambda-Runtime-Function-Error-Type")
		},
	}
	<-done
	w.WriteHeader(http.StatusAccepted)
}

func (rt *Runtime) fail(w http.ResponseWriter, r *http.Request) {
	inv := rt.lookup(r.PathValue("id"))
	if inv == nil {
		http.Error(w, "unknown request id", http.StatusBadRequest)
		return
	}
	b, _ := io.ReadAll(r.Body)
	kind := r.Header.Get("Lambda-Runtime-Function-Error-Type")
	if kind == "" {
		kind = "Unhandled"
	}
	inv.result <- &Result{
		ContentType:   "application/json",
		Body:          io.NopCloser(bytes.NewReader(b)),
		FunctionError: func() string { return kind },
	}
	w.WriteHeader(http.StatusAccepted)
}

// resultBody is the runtime's request body as the invoker reads it.
type resultBody struct {
	r    io.Reader
	once sync.Once
	done chan struct{}
}

func (b *resultBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil {
		b.once.Do(func() { close(b.done) })
	}
	return n, err
}

// Close drains what the function still sends (it runs on, as on AWS, when
// the client is gone) and lets the runtime's POST finish.
func (b *resultBody) Close() error {
	go func() {
		_, _ = io.Copy(io.Discard, b.r)
		b.once.Do(func() { close(b.done) })
	}()
	return nil
}

// Close stops every process (SIGTERM, then SIGKILL) and the server.
func (rt *Runtime) Close() {
	rt.mu.Lock()
	rt.closed = true
	procs := rt.procs
	rt.mu.Unlock()
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	time.Sleep(50 * time.Millisecond)
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGKILL)
	}
	rt.srv.CloseClientConnections()
	rt.srv.Close()
}
