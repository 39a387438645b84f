package test

// The end-to-end tests' machinery: the bootstrap builds, the shared kumo, and
// a stack per test — its own table, bucket and queue provisioned from
// template.yaml, the three functions running as real bootstrap processes, the
// operator API behind kumo's API Gateway with a JWT authorizer, and a pump
// doing what Lambda's SQS event source mapping would.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/auth/authtest"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/test/harness"
)

// The function timeouts. Operator and tick are template.yaml's; the resume
// function's 900 s is cut to 30 s so that kumo gives up on an invocation of
// a killed process within the test. The test agents' 1.5 s budget, not the
// timeout, bounds their invocations.
const (
	operatorTimeout = 29 * time.Second
	resumeTimeout   = 30 * time.Second
	tickTimeout     = 60 * time.Second
)

// The JWT authorizer's configuration and the callers.
const (
	jwtAudience = "baton-operators"
	alice       = "alice"
	bob         = "bob"
)

// wakeGrace is BATON_WAKE_GRACE for the test stacks.
const wakeGrace = time.Second

// functionRoles are the function mains under functions/.
var functionRoles = []string{"operator", "resume", "tick"}

var (
	buildOnce  sync.Once
	buildDir   string
	bootstraps map[string]string
	buildErr   error
	buildTook  time.Duration

	emuOnce     sync.Once
	emu         *emulator.Emulator
	emuErr      error
	restoreSelf func()

	startupMu sync.Mutex
	startups  []time.Duration

	stackSeq atomic.Int64

	issuerOnce sync.Once
	idp        *authtest.Issuer
	idpErr     error
)

// issuer is the test binary's JWT issuer: kumo's authorizer and the
// operator function (which verifies signatures against its JWKS) both
// trust it.
func issuer(t *testing.T) *authtest.Issuer {
	t.Helper()
	issuerOnce.Do(func() { idp, idpErr = authtest.Start(jwtAudience) })
	if idpErr != nil {
		t.Fatal(idpErr)
	}
	return idp
}

// e2eParallel is how many end-to-end tests run at once unless -parallel
// says otherwise. Each has its own stack, and most of a test's time is
// spent waiting on its functions' processes, leases and timeouts, not on a
// core, so more run at once than the machine has cores (go test's default).
const e2eParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		if err := flag.Set("test.parallel", strconv.Itoa(e2eParallel)); err != nil {
			fmt.Fprintln(os.Stderr, "set -parallel:", err)
		}
	}
	code := m.Run()
	if restoreSelf != nil {
		restoreSelf()
	}
	if emu != nil {
		emu.Close()
	}
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	if idp != nil {
		idp.Close()
	}
	os.Exit(code)
}

// bootstrap returns the host build of functions/<role>, building all three
// once per test binary.
func bootstrap(t *testing.T, role string) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "baton-e2e-")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		began := time.Now()
		defer func() { buildTook = time.Since(began) }()
		bootstraps = map[string]string{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		var errs []error
		for _, r := range functionRoles {
			dir := filepath.Join(buildDir, r)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				buildErr = err
				return
			}
			wg.Go(func() {
				p, err := harness.BuildBootstrap(ctx, "./functions/"+r, dir)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				bootstraps[r] = p
			})
		}
		wg.Wait()
		buildErr = errors.Join(errs...)
	})
	if buildErr != nil {
		t.Fatalf("build bootstraps: %v", buildErr)
	}
	return bootstraps[role]
}

// kumo starts the process's kumo once and routes its API Gateway self-calls.
// kumo's state is process-wide anyway; each stack makes its own resources.
func kumo(t testing.TB) *emulator.Emulator {
	t.Helper()
	emuOnce.Do(func() {
		e := emulator.Start()
		if e.External {
			emuErr = fmt.Errorf("AWS_ENDPOINT_URL=%s: the end-to-end tests need the in-process kumo (Lambda Runtime API, API Gateway)", e.URL)
			return
		}
		emu = e
		restoreSelf, emuErr = harness.RouteSelfCalls(e.URL)
	})
	if emuErr != nil {
		if emu == nil {
			t.Skip(emuErr)
		}
		t.Fatal(emuErr)
	}
	return emu
}

func recordStartup(d time.Duration) {
	startupMu.Lock()
	startups = append(startups, d)
	startupMu.Unlock()
}

func startupLatencies() []time.Duration {
	startupMu.Lock()
	defer startupMu.Unlock()
	return slices.Clone(startups)
}

// testdataPath is the absolute path of a file under test/testdata; the
// function processes run in their bootstrap's directory.
func testdataPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// logBuffer collects a function's output (JSON logs).
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// stackConfig chooses a stack's agents and whether its functions reach kumo
// through counting proxies.
type stackConfig struct {
	// agents is BATON_AGENTS: "" for the embedded demo.
	agents string
	// count puts a harness.CountingProxy between each function and kumo.
	count bool
	// timeout bounds the whole stack's life (its context); zero means 2
	// minutes.
	timeout time.Duration
	// wakeGrace is the stack's BATON_WAKE_GRACE; zero means wakeGrace.
	wakeGrace time.Duration
	// env is more environment for every function.
	env map[string]string
	// claimsPoll is the stack's BATON_CLAIMS_POLL; zero leaves it unset
	// (claims.DefaultPoll).
	claimsPoll time.Duration
}

type namedLog struct {
	name string
	buf  *logBuffer
}

// stack is one test's baton deployment.
type stack struct {
	t   *testing.T
	ctx context.Context
	emu *emulator.Emulator
	id  string
	res provision.Resources
	// store reads facts, state and streams directly, for waiting.
	store *session.Store
	env   map[string]string

	api      *harness.HTTPAPI
	operator *harness.Function
	tick     *harness.Function
	resume   atomic.Pointer[harness.Function]
	pump     *pump
	// proxies by role, when counting.
	proxies map[string]*harness.CountingProxy

	logMu sync.Mutex
	logs  []namedLog
}

func newStack(t *testing.T, cfg stackConfig) *stack {
	t.Helper()
	// Build the bootstraps first: on a cold build cache that takes minutes,
	// and must not eat into the stack's own deadline.
	for _, r := range functionRoles {
		bootstrap(t, r)
	}
	e := kumo(t)
	life := cfg.timeout
	if life == 0 {
		life = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(t.Context(), life)
	t.Cleanup(cancel)
	s := &stack{
		t: t, ctx: ctx, emu: e,
		id: fmt.Sprintf("e2e-%s-%d", strconv.FormatInt(time.Now().UnixNano(), 36), stackSeq.Add(1)),
	}
	fresh, err := testenv.Provision(ctx, e, baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	res := fresh.Resources
	s.res = res
	s.store = session.New(dynamo.New(e.Clients.DynamoDB, res.Table), streams.New(e.Clients.S3, res.Bucket))
	s.env = map[string]string{
		"BATON_TABLE":        res.Table,
		"BATON_BUCKET":       res.Bucket,
		"BATON_QUEUE_URL":    res.QueueURL,
		"BATON_AGENTS":       cfg.agents,
		"BATON_WAKE_GRACE":   cmp.Or(cfg.wakeGrace, wakeGrace).String(),
		"LOG_FORMAT":         "json",
		"BATON_JWT_ISSUER":   issuer(t).URL,
		"BATON_JWT_AUDIENCE": jwtAudience,
	}
	maps.Copy(s.env, cfg.env)
	if cfg.claimsPoll > 0 {
		s.env["BATON_CLAIMS_POLL"] = cfg.claimsPoll.String()
	}
	if cfg.count {
		s.proxies = map[string]*harness.CountingProxy{}
		for _, r := range functionRoles {
			p, err := harness.NewCountingProxy(e.URL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			s.proxies[r] = p
		}
	}
	// Logs are kept quiet unless the test fails.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		s.logMu.Lock()
		defer s.logMu.Unlock()
		for _, l := range s.logs {
			out := l.buf.String()
			if lines := strings.Split(out, "\n"); len(lines) > 150 {
				out = strings.Join(lines[len(lines)-150:], "\n")
			}
			t.Logf("--- output of %s ---\n%s", l.name, out)
		}
	})

	s.operator = s.start("operator", "operator", operatorTimeout)
	s.tick = s.start("tick", "tick", tickTimeout)
	s.resume.Store(s.start("resume", "resume", resumeTimeout))

	var routes, public []string
	tr := tree(t)
	evs, _ := at(tr, "Resources", "OperatorFunction", "Properties", "Events").(map[string]any)
	for _, ev := range evs {
		if at(ev, "Type") == "HttpApi" {
			route := fmt.Sprintf("%v %v", at(ev, "Properties", "Method"), at(ev, "Properties", "Path"))
			routes = append(routes, route)
			if at(ev, "Properties", "Auth", "Authorizer") == "NONE" {
				public = append(public, route)
			}
		}
	}
	slices.Sort(routes)
	if len(routes) == 0 {
		t.Fatal("template.yaml declares no operator routes")
	}
	s.api, err = harness.CreateHTTPAPI(ctx, e.URL, s.operator.ARN, harness.HTTPAPIConfig{
		Name:   s.id,
		Routes: routes,
		Public: public,
		JWT:    &harness.JWTAuthorizer{Issuer: issuer(t).URL, Audience: []string{jwtAudience}},
	})
	if err != nil {
		t.Fatal(err)
	}

	s.pump = startPump(t, s)
	return s
}

// start starts a function process of role under a name of its own.
func (s *stack) start(role, name string, timeout time.Duration) *harness.Function {
	s.t.Helper()
	f, err := s.tryStart(role, name, timeout)
	if err != nil {
		s.t.Fatal(err)
	}
	return f
}

// tryStart is start returning its error, for goroutines other than the
// test's. The bootstraps must be built already.
func (s *stack) tryStart(role, name string, timeout time.Duration) (*harness.Function, error) {
	env := maps.Clone(s.env)
	if p, ok := s.proxies[role]; ok {
		env["AWS_ENDPOINT_URL"] = p.URL
	}
	buf := &logBuffer{}
	full := name + "-" + s.id
	f, err := harness.StartFunction(s.ctx, s.emu.URL, full, bootstraps[role], env,
		harness.WithTimeout(timeout), harness.WithOutput(buf))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", full, err)
	}
	recordStartup(f.StartupLatency())
	s.t.Cleanup(func() { _ = f.Stop() })
	s.logMu.Lock()
	s.logs = append(s.logs, namedLog{full, buf})
	s.logMu.Unlock()
	return f, nil
}

// logsMatching returns the output lines of every function so far holding sub.
func (s *stack) logsMatching(sub string) []string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	var out []string
	for _, l := range s.logs {
		for line := range strings.SplitSeq(l.buf.String(), "\n") {
			if strings.Contains(line, sub) {
				out = append(out, l.name+": "+line)
			}
		}
	}
	return out
}

// fireTick invokes the tick function with an EventBridge scheduled event, as
// its rate(1 minute) schedule would.
func (s *stack) fireTick() tick.Report {
	s.t.Helper()
	ev, err := harness.ScheduledEvent("arn:aws:events:"+harness.Region+":"+harness.Account+":rule/"+s.id+"-tick", harness.Region, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	out, err := s.tick.Invoke(ctx, ev)
	if err != nil {
		s.t.Fatalf("tick: %v %s", err, out)
	}
	var rep tick.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		s.t.Fatalf("tick report %s: %v", out, err)
	}
	s.t.Logf("tick: %+v", rep)
	return rep
}

// --- the operator API, through API Gateway ---

type reply struct {
	code int
	hdr  http.Header
	body []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.code, bytes.TrimSpace(r.body)) }

func bearer(t *testing.T, sub string) string {
	t.Helper()
	return issuer(t).Token(sub)
}

// do sends a request through API Gateway as user ("" sends no token). A
// non-empty body is sent as application/json unless hdr says otherwise.
func (s *stack) do(method, path, user, body string, hdr map[string]string) reply {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := s.api.NewRequest(ctx, method, path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+bearer(s.t, user))
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return reply{code: resp.StatusCode, hdr: resp.Header, body: b}
}

// must sends a request and decodes the answer into out (when not nil),
// failing the test unless the status is want.
func (s *stack) must(want int, method, path, user, body string, out any) {
	s.t.Helper()
	r := s.do(method, path, user, body, nil)
	if r.code != want {
		s.t.Fatalf("%s %s as %s: %v, want %d", method, path, user, r, want)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, r.body)
		}
	}
}

func (s *stack) createSession(user, agent string) string {
	s.t.Helper()
	var v api.Session
	s.must(http.StatusCreated, "POST", "/sessions", user, `{"agent":"`+agent+`"}`, &v)
	if v.ID == "" || v.Agent != agent {
		s.t.Fatalf("created session %+v", v)
	}
	return v.ID
}

func (s *stack) post(user, id, text string) {
	s.t.Helper()
	b, _ := json.Marshal(map[string]string{"text": text})
	var v api.MessageAccepted
	s.must(http.StatusAccepted, "POST", "/sessions/"+id+"/messages", user, string(b), &v)
	if v.MessageID == "" {
		s.t.Fatal("message accepted without an id")
	}
}

func (s *stack) session(user, id string) api.Session {
	s.t.Helper()
	var v api.Session
	s.must(http.StatusOK, "GET", "/sessions/"+id, user, "", &v)
	return v
}

func (s *stack) facts(user, id string) []reducer.Fact {
	s.t.Helper()
	var v api.Facts
	s.must(http.StatusOK, "GET", "/sessions/"+id+"/facts", user, "", &v)
	return v.Facts
}

func (s *stack) answer(user, id, approval, decision string) {
	s.t.Helper()
	var v api.Accepted
	s.must(http.StatusAccepted, "POST", "/sessions/"+id+"/approvals/"+approval, user, `{"decision":"`+decision+`"}`, &v)
	if v.Status != decision {
		s.t.Fatalf("answer: %+v", v)
	}
}

// waitPending polls GET /sessions/{id} until the open turn waits for an
// approval, and returns it.
func (s *stack) waitPending(user, id string, timeout time.Duration) api.Approval {
	s.t.Helper()
	var last api.Session
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		last = s.session(user, id)
		if len(last.Pending) > 0 {
			if last.Status != reducer.Suspended || last.Turn == nil || last.Turn.Cause != reducer.CauseApproval {
				s.t.Fatalf("pending approval on a session that is not suspended for it: %+v", last)
			}
			return last.Pending[0]
		}
		if last.Status == reducer.Idle && last.Turns > 0 {
			s.t.Fatalf("the turn ended without asking for approval: %+v", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("no pending approval after %v: %+v", timeout, last)
	return api.Approval{}
}

// readStream reads a turn's stream through the API as JSON pages, following
// the cursor until the stream is closed.
func (s *stack) readStream(user, id, turn string, timeout time.Duration) ([]parts.Part, streams.Status) {
	s.t.Helper()
	var ps []parts.Part
	var cursor streams.Cursor
	deadline := time.Now().Add(timeout)
	for pages := 0; ; pages++ {
		var page api.StreamPage
		path := "/sessions/" + id + "/turns/" + turn + "/stream"
		if cursor != "" {
			path += "?after=" + string(cursor)
		}
		s.must(http.StatusOK, "GET", path, user, "", &page)
		for _, e := range page.Parts {
			ps = append(ps, e.Part)
		}
		if len(page.Parts) > 0 && page.Cursor != page.Parts[len(page.Parts)-1].Cursor {
			s.t.Fatalf("page cursor %s is not its last part's %s", page.Cursor, page.Parts[len(page.Parts)-1].Cursor)
		}
		cursor = streams.Cursor(page.Cursor)
		if streams.Status(page.Closed) != streams.Open {
			s.t.Logf("stream %s: %d parts in %d pages, closed %s", turn, len(ps), pages+1, page.Closed)
			return ps, streams.Status(page.Closed)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("stream %s still open after %v (%d parts)", turn, timeout, len(ps))
		}
		if len(page.Parts) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// --- direct reads, for waiting without going through the API ---

// waitFacts polls the session's facts in DynamoDB until ok holds.
func (s *stack) waitFacts(id, what string, timeout time.Duration, ok func([]reducer.Fact) bool) []reducer.Fact {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var facts []reducer.Fact
	for {
		var err error
		facts, err = s.store.Facts(s.ctx, id, 0)
		if err != nil {
			s.t.Fatalf("read facts of %s: %v", id, err)
		}
		if ok(facts) {
			return facts
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waited %v for %s; facts: %s", timeout, what, summary(facts))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (s *stack) waitCompleted(id string, timeout time.Duration) []reducer.Fact {
	s.t.Helper()
	return s.waitFacts(id, "the turn to end", timeout, func(fs []reducer.Fact) bool {
		return len(fs) > 0 && fs[len(fs)-1].Ends()
	})
}

// --- the SQS event source mapping ---

// pump does for the stack's wake queue what Lambda's SQS event source
// mapping does: receive batches (WaitTimeSeconds 0: kumo's long poll misses
// delayed messages), invoke the resume function with them as an SQS event,
// and delete every record not reported in batchItemFailures. A failed
// invocation leaves its batch in flight until the visibility timeout.
// Interceptors take matching wakes off the queue instead: a lost wake.
type pump struct {
	s   *stack
	arn string

	mu         sync.Mutex
	intercepts []*interceptor
	wakes      []wake.Wake // delivered and deleted

	batches   atomic.Int64
	delivered atomic.Int64
	stopped   chan struct{}
}

type interceptor struct {
	match func(wake.Wake) bool
	got   chan sqstypes.Message
}

func startPump(t *testing.T, s *stack) *pump {
	t.Helper()
	out, err := s.emu.Clients.SQS.GetQueueAttributes(s.ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(s.res.QueueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &pump{s: s, arn: out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], stopped: make(chan struct{})}
	ctx, cancel := context.WithCancel(s.ctx)
	go p.run(ctx)
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.stopped:
		case <-time.After(40 * time.Second):
			t.Error("the SQS pump did not stop")
		}
	})
	return p
}

// intercept takes the next wake matching match off the queue (deleting it)
// instead of delivering it, and sends it on the returned channel.
func (p *pump) intercept(match func(wake.Wake) bool) <-chan sqstypes.Message {
	ic := &interceptor{match: match, got: make(chan sqstypes.Message, 1)}
	p.mu.Lock()
	p.intercepts = append(p.intercepts, ic)
	p.mu.Unlock()
	return ic.got
}

func (p *pump) intercepted(m sqstypes.Message) bool {
	w, err := wake.Parse(aws.ToString(m.Body))
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ic := range p.intercepts {
		if ic.match(w) {
			p.intercepts = slices.Delete(p.intercepts, i, i+1)
			ic.got <- m
			return true
		}
	}
	return false
}

// reasons returns the reasons of the wakes for session the resume function
// has handled, in order.
func (p *pump) reasons(session string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, w := range p.wakes {
		if w.Session == session {
			out = append(out, string(w.Reason))
		}
	}
	return out
}

func (p *pump) run(ctx context.Context) {
	defer close(p.stopped)
	sqsc := p.s.emu.Clients.SQS
	url := aws.String(p.s.res.QueueURL)
	idle := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for ctx.Err() == nil {
		f := p.s.resume.Load()
		select {
		case <-f.Exited():
			// Lambda would start a new execution environment; here the
			// test does, and swaps it in.
			if !idle(20 * time.Millisecond) {
				return
			}
			continue
		default:
		}
		out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    url,
			MaxNumberOfMessages:         10,
			WaitTimeSeconds:             0,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil || len(out.Messages) == 0 {
			if !idle(50 * time.Millisecond) {
				return
			}
			continue
		}
		var batch []sqstypes.Message
		for _, m := range out.Messages {
			if p.intercepted(m) {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_, err := sqsc.DeleteMessage(dctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
				cancel()
				if err != nil {
					p.s.t.Errorf("pump: delete intercepted wake: %v", err)
				}
				continue
			}
			batch = append(batch, m)
		}
		if len(batch) == 0 {
			continue
		}
		payload, err := json.Marshal(harness.SQSEvent(batch, p.arn, harness.Region))
		if err != nil {
			p.s.t.Errorf("pump: %v", err)
			return
		}
		p.batches.Add(1)
		ictx, cancel := context.WithTimeout(ctx, resumeTimeout+5*time.Second)
		res, err := f.Invoke(ictx, payload)
		cancel()
		if err != nil {
			// The batch stays in flight: SQS delivers it again after the
			// visibility timeout, as it would on AWS.
			if ctx.Err() == nil {
				p.s.t.Logf("pump: invoke %s with %d record(s): %v", f.Name, len(batch), err)
			}
			continue
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(res, &resp); err != nil {
			p.s.t.Errorf("pump: resume answered %s: %v", res, err)
			continue
		}
		failed := map[string]bool{}
		for _, bf := range resp.BatchItemFailures {
			failed[bf.ItemIdentifier] = true
		}
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		for _, m := range batch {
			if failed[aws.ToString(m.MessageId)] {
				continue
			}
			p.delivered.Add(1)
			if w, err := wake.Parse(aws.ToString(m.Body)); err == nil {
				p.mu.Lock()
				p.wakes = append(p.wakes, w)
				p.mu.Unlock()
			}
			if _, err := sqsc.DeleteMessage(dctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}); err != nil {
				p.s.t.Errorf("pump: delete: %v", err)
			}
		}
		dcancel()
	}
}

// --- facts ---

// summary renders facts compactly: "1 session.created, 2 message.received,
// 3 turn.started, 4 turn.suspended(budget), ...".
func summary(facts []reducer.Fact) string {
	var b strings.Builder
	for i, f := range facts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", f.Seq, f.Type)
		switch {
		case f.Cause != "":
			fmt.Fprintf(&b, "(%s)", f.Cause)
		case f.Answer != nil:
			fmt.Fprintf(&b, "(%s %s)", f.Answer.Decision, f.Answer.Reason)
		}
		if f.Actor.Kind != reducer.ActorAgent {
			fmt.Fprintf(&b, "[%s:%s]", f.Actor.Kind, f.Actor.ID)
		}
	}
	return b.String()
}

func ofType(facts []reducer.Fact, typ reducer.Type) []reducer.Fact {
	var out []reducer.Fact
	for _, f := range facts {
		if f.Type == typ {
			out = append(out, f)
		}
	}
	return out
}

func suspended(facts []reducer.Fact, cause reducer.Cause) []reducer.Fact {
	var out []reducer.Fact
	for _, f := range ofType(facts, reducer.TurnSuspended) {
		if f.Cause == cause {
			out = append(out, f)
		}
	}
	return out
}

// checkResumes asserts that every suspension of a turn that has ended is
// followed by exactly one turn.resumed before the next suspension or the
// turn's end.
func checkResumes(t *testing.T, facts []reducer.Fact) {
	t.Helper()
	for _, p := range unresumed(facts) {
		t.Errorf("%s: %s", p, summary(facts))
	}
}

// unresumed says, for each suspension in facts not followed by exactly one
// turn.resumed before the next suspension or the turn's end, how many it
// had.
func unresumed(facts []reducer.Fact) []string {
	var out []string
	for i, f := range facts {
		if f.Type != reducer.TurnSuspended {
			continue
		}
		resumed := 0
		for _, g := range facts[i+1:] {
			if g.Type == reducer.TurnSuspended || g.Ends() {
				break
			}
			if g.Type == reducer.TurnResumed {
				resumed++
			}
		}
		if resumed != 1 {
			out = append(out, fmt.Sprintf("suspension at seq %d (%s) was resumed %d times, want once", f.Seq, f.Cause, resumed))
		}
	}
	return out
}
