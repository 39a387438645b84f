package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/baton-run/baton/internal/emulator"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// echoBootstrap builds testdata/echo once per test binary.
func echoBootstrap(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "harness-echo-")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		buildPath, buildErr = BuildBootstrap(ctx, "./test/harness/testdata/echo", buildDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

func startKumo(t *testing.T) string {
	t.Helper()
	emu := emulator.Start()
	t.Cleanup(emu.Close)
	return emu.URL
}

func start(t *testing.T, ctx context.Context, endpoint, name string, env map[string]string, opts ...Option) *Function {
	t.Helper()
	f, err := StartFunction(ctx, endpoint, name, echoBootstrap(t), env, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	return f
}

type echo struct {
	Payload      json.RawMessage `json:"payload"`
	Tag          string          `json:"tag"`
	RemainingMS  int64           `json:"remaining_ms"`
	HasDeadline  bool            `json:"has_deadline"`
	RequestID    string          `json:"request_id"`
	FunctionARN  string          `json:"function_arn"`
	FunctionName string          `json:"function_name"`
	PID          int             `json:"pid"`
}

func TestEcho(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	endpoint := startKumo(t)
	f := start(t, ctx, endpoint, "echo", map[string]string{"ECHO_TAG": "tag-1"}, WithTimeout(5*time.Second))
	t.Logf("AWS_LAMBDA_RUNTIME_API=%s ARN=%s startup=%v", f.RuntimeAPI, f.ARN, f.StartupLatency())

	seen := map[string]bool{}
	for i := range 3 {
		in := fmt.Sprintf(`{"n":%d,"msg":"hello"}`, i)
		out, err := f.Invoke(ctx, []byte(in))
		if err != nil {
			t.Fatalf("invoke %d: %v", i, err)
		}
		var got echo
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("invoke %d: %v: %s", i, err, out)
		}
		t.Logf("invoke %d: %s", i, out)
		if string(got.Payload) != in {
			t.Errorf("payload = %s, want %s", got.Payload, in)
		}
		if got.Tag != "tag-1" {
			t.Errorf("tag = %q, want tag-1", got.Tag)
		}
		// kumo sends Lambda-Runtime-Deadline-Ms = pickup time + Timeout.
		if !got.HasDeadline || got.RemainingMS <= 4000 || got.RemainingMS > 5000 {
			t.Errorf("remaining = %dms (deadline %v), want (4000,5000]", got.RemainingMS, got.HasDeadline)
		}
		if got.FunctionName != "echo" {
			t.Errorf("function name = %q", got.FunctionName)
		}
		// kumo's invoked ARN is its own fixed form, not the CreateFunction ARN.
		if got.FunctionARN != "arn:aws:lambda:local:000000000000:function:echo" {
			t.Errorf("invoked function arn = %q", got.FunctionARN)
		}
		if got.RequestID == "" || seen[got.RequestID] {
			t.Errorf("request id %q empty or repeated", got.RequestID)
		}
		seen[got.RequestID] = true
	}

	// kumo stores the Environment passed to CreateFunction (it never hands
	// it to the process; the harness does).
	cfg, err := f.Client().GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("echo")})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Environment == nil || cfg.Environment.Variables["ECHO_TAG"] != "tag-1" || aws.ToInt32(cfg.Timeout) != 5 {
		t.Errorf("configuration: env %+v timeout %d", cfg.Environment, aws.ToInt32(cfg.Timeout))
	}
}

func TestFunctionErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	endpoint := startKumo(t)
	f := start(t, ctx, endpoint, "errs", nil)

	// A handler error: the runtime posts to .../error, kumo answers 200
	// with X-Amz-Function-Error: Unhandled and the runtime's document.
	out, err := f.Invoke(ctx, []byte(`{"fail":"boom"}`))
	var fe *FunctionError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want *FunctionError", err)
	}
	t.Logf("handler error: %v payload=%s", fe, out)
	if fe.Kind != "Unhandled" || fe.Type != "errorString" || fe.Message != "boom" {
		t.Errorf("got %+v", fe)
	}

	// The process survives a handler error.
	if _, err := f.Invoke(ctx, []byte(`{}`)); err != nil {
		t.Fatalf("after handler error: %v", err)
	}

	// A panic: reported the same way, then aws-lambda-go exits the process.
	out, err = f.Invoke(ctx, []byte(`{"panic":"kaboom"}`))
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want *FunctionError", err)
	}
	t.Logf("panic: %v payload=%.200s", fe, out)
	if fe.Type != "string" || fe.Message != "kaboom" {
		t.Errorf("got %+v", fe)
	}
	select {
	case <-f.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("process still running after a panic")
	}
	if _, err := f.Invoke(ctx, []byte(`{}`)); !errors.Is(err, ErrExited) {
		t.Errorf("invoke after exit: %v, want ErrExited", err)
	}
}

// TestKillMidInvocation records what happens when the bootstrap is SIGKILLed
// while it holds an invocation.
func TestKillMidInvocation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	endpoint := startKumo(t)

	// Through the harness: Invoke notices the exit and returns ErrExited.
	f := start(t, ctx, endpoint, "victim", nil, WithTimeout(2*time.Second))
	errc := make(chan error, 1)
	began := time.Now()
	go func() {
		_, err := f.Invoke(ctx, []byte(`{"sleep_ms":30000}`))
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond) // let the process pick it up
	if err := f.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case err := <-errc:
		t.Logf("harness Invoke after SIGKILL: returned %v after kill (%v total): %v",
			time.Since(killed).Round(time.Millisecond), time.Since(began).Round(time.Millisecond), err)
		if !errors.Is(err, ErrExited) {
			t.Errorf("err = %v, want ErrExited", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("harness Invoke hung after SIGKILL")
	}
	_ = f.Stop()

	// Raw kumo: the Invoke API call is answered only when the function's
	// Timeout runs out, with a Sandbox.Timedout function error.
	f = start(t, ctx, endpoint, "victim-raw", nil, WithTimeout(2*time.Second))
	type result struct {
		out *lambda.InvokeOutput
		err error
	}
	resc := make(chan result, 1)
	began = time.Now()
	go func() {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := f.Client().Invoke(c, &lambda.InvokeInput{FunctionName: aws.String(f.Name), Payload: []byte(`{"sleep_ms":30000}`)})
		resc <- result{out, err}
	}()
	time.Sleep(500 * time.Millisecond)
	if err := f.Kill(); err != nil {
		t.Fatal(err)
	}
	r := <-resc
	elapsed := time.Since(began)
	if r.err != nil {
		t.Fatalf("raw invoke: %v", r.err)
	}
	t.Logf("raw Invoke after SIGKILL: status %d after %v, FunctionError=%q payload=%s",
		r.out.StatusCode, elapsed.Round(time.Millisecond), aws.ToString(r.out.FunctionError), r.out.Payload)
	if aws.ToString(r.out.FunctionError) != "Unhandled" || !strings.Contains(string(r.out.Payload), "Sandbox.Timedout") {
		t.Errorf("raw invoke: %q %s", aws.ToString(r.out.FunctionError), r.out.Payload)
	}
	if elapsed < 2*time.Second || elapsed > 4*time.Second {
		t.Errorf("raw invoke answered after %v, want ~2s (the function timeout)", elapsed)
	}

	// Raw kumo, nobody polling any more: kumo waits up to 30s for a poller
	// (then 502 ServiceException); here the caller's ctx gives up first.
	c, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	began = time.Now()
	_, err := f.Client().Invoke(c, &lambda.InvokeInput{FunctionName: aws.String(f.Name), Payload: []byte(`{}`)})
	t.Logf("raw Invoke with no poller: after %v: %v", time.Since(began).Round(time.Millisecond), err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context deadline", err)
	}

	// Restart under the same name: the new process serves the function.
	f2 := start(t, ctx, endpoint, "victim-raw", map[string]string{"ECHO_TAG": "again"})
	out, err := f2.Invoke(ctx, []byte(`{}`))
	if err != nil || !strings.Contains(string(out), `"tag":"again"`) {
		t.Fatalf("restart: %v %s", err, out)
	}
}

// TestNoPoller documents kumo's answer when a function was never polled.
func TestNoPoller(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	endpoint := startKumo(t)
	c := LambdaClient(endpoint)
	// kumo servers in one process share state (also across -count runs),
	// so the name must be new.
	name := fmt.Sprintf("lonely-%d", time.Now().UnixNano())
	_, err := c.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String(name),
		Role:         aws.String(Role),
		Runtime:      lambdatypes.RuntimeProvidedal2023,
		Handler:      aws.String("bootstrap"),
		Code:         &lambdatypes.FunctionCode{ZipFile: []byte("not even a zip")},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(name), Payload: []byte(`{}`)})
	t.Logf("invoke, never polled: %v", err)
	if err == nil || !strings.Contains(err.Error(), "has no runtime handler") {
		t.Errorf("err = %v", err)
	}
}

// TestStartupLatency measures process start -> first GET .../next.
func TestStartupLatency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	endpoint := startKumo(t)
	echoBootstrap(t) // build outside the measurement
	const runs = 11
	var lat []time.Duration
	for i := range runs {
		f := start(t, ctx, endpoint, fmt.Sprintf("lat-%d", i), nil)
		lat = append(lat, f.StartupLatency())
		if _, err := f.Invoke(ctx, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		_ = f.Stop()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("startup->first poll over %d runs: min %v median %v max %v (all %v)",
		runs, lat[0], lat[runs/2], lat[runs-1], lat)
}

type httpEcho struct {
	RouteKey string            `json:"route_key"`
	RawPath  string            `json:"raw_path"`
	Body     string            `json:"body"`
	Claims   map[string]string `json:"claims"`
	Scopes   []string          `json:"scopes"`
	Tag      string            `json:"tag"`
	Event    json.RawMessage   `json:"event"`
}

// TestHTTPAPIJWT fronts the echo function with a kumo HTTP API (payload 2.0)
// protected by a JWT authorizer.
func TestHTTPAPIJWT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	endpoint := startKumo(t)

	// The issuer is a live server; kumo never calls it.
	var idpHits atomic.Int32
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idpHits.Add(1)
		http.NotFound(w, r)
	}))
	defer idp.Close()

	f := start(t, ctx, endpoint, "api-echo", map[string]string{"ECHO_TAG": "via-api"})
	api, err := CreateHTTPAPI(ctx, endpoint, f.ARN, HTTPAPIConfig{
		Routes: []string{"POST /turns", "GET /turns/{id}"},
		JWT:    &JWTAuthorizer{Issuer: idp.URL, Audience: []string{"baton"}, Scopes: []string{"turns:write"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("api %s: send to %s with Host %s", api.ID, api.Endpoint, api.Host)

	token := func(claims map[string]any) string {
		tok, err := UnverifiedJWT(claims)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	exp := time.Now().Add(time.Hour).Unix()
	good := map[string]any{"iss": idp.URL, "aud": "baton", "sub": "user-1", "exp": exp, "scope": "turns:read turns:write", "n": 42, "admin": true}
	do := func(method, path, bearer, body string) (int, http.Header, []byte) {
		t.Helper()
		req, err := api.NewRequest(ctx, method, path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}

	// Without RouteSelfCalls kumo's execute-api invokes the function at
	// localhost:4566 and answers 500. Only checked when nothing listens there.
	if c, err := net.DialTimeout("tcp", "localhost:4566", 200*time.Millisecond); err == nil {
		_ = c.Close()
	} else {
		code, _, b := do("POST", "/turns", token(good), `{}`)
		t.Logf("without RouteSelfCalls: %d %s", code, b)
		if code != http.StatusInternalServerError {
			t.Errorf("without RouteSelfCalls: %d %s, want 500", code, b)
		}
	}

	restore, err := RouteSelfCalls(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()

	code, hdr, b := do("POST", "/turns?x=1", token(good), `{"prompt":"hi"}`)
	if code != http.StatusOK {
		t.Fatalf("POST /turns: %d %s", code, b)
	}
	var got httpEcho
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	t.Logf("event as the function got it: %s", got.Event)
	if hdr.Get("X-Echo") != "1" {
		t.Errorf("proxy response header X-Echo not passed through: %v", hdr)
	}
	if got.RouteKey != "POST /turns" || got.RawPath != "/turns" || got.Body != `{"prompt":"hi"}` || got.Tag != "via-api" {
		t.Errorf("echo = %+v", got)
	}
	wantClaims := map[string]string{"iss": idp.URL, "aud": "baton", "sub": "user-1", "exp": fmt.Sprint(exp),
		"scope": "turns:read turns:write", "n": "42", "admin": "true"}
	for k, v := range wantClaims {
		if got.Claims[k] != v {
			t.Errorf("claim %s = %q, want %q", k, got.Claims[k], v)
		}
	}
	if strings.Join(got.Scopes, " ") != "turns:read turns:write" {
		t.Errorf("scopes = %v", got.Scopes)
	}

	// Decoded with aws-lambda-go's own type, as a baton function would.
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(got.Event, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.RequestContext.Authorizer == nil || ev.RequestContext.Authorizer.JWT == nil ||
		ev.RequestContext.Authorizer.JWT.Claims["sub"] != "user-1" || ev.RawQueryString != "x=1" ||
		ev.RequestContext.HTTP.Method != "POST" || ev.RequestContext.APIID != api.ID {
		t.Errorf("APIGatewayV2HTTPRequest = %+v", ev)
	}

	// Path parameters.
	code, _, b = do("GET", "/turns/t-9", token(good), "")
	if code != http.StatusOK {
		t.Fatalf("GET /turns/t-9: %d %s", code, b)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got.Event, &ev); err != nil {
		t.Fatal(err)
	}
	if got.RouteKey != "GET /turns/{id}" || ev.PathParameters["id"] != "t-9" {
		t.Errorf("GET: route %q params %v", got.RouteKey, ev.PathParameters)
	}

	// What the authorizer rejects (401 {"message":"Unauthorized"}) and what
	// it lets through.
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name   string
		bearer string
		want   int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"not a JWT", "abc", http.StatusUnauthorized},
		{"wrong issuer", token(with("iss", "https://evil.example")), http.StatusUnauthorized},
		{"wrong audience", token(with("aud", "other")), http.StatusUnauthorized},
		{"aud array containing baton", token(with("aud", []string{"x", "baton"})), http.StatusOK},
		{"neither aud nor client_id", token(with("aud", nil)), http.StatusUnauthorized},
		{"expired", token(with("exp", time.Now().Add(-time.Minute).Unix())), http.StatusUnauthorized},
		{"no exp", token(with("exp", nil)), http.StatusUnauthorized},
		{"scope lacking turns:write (scopes not enforced)", token(with("scope", "turns:read")), http.StatusOK},
	}
	ca := with("aud", nil)
	ca["client_id"] = "baton"
	cases = append(cases, struct {
		name   string
		bearer string
		want   int
	}{"client_id=baton, no aud", token(ca), http.StatusOK})
	for _, c := range cases {
		code, _, b := do("POST", "/turns", c.bearer, `{}`)
		t.Logf("%-48s -> %d %.60s", c.name, code, b)
		if code != c.want {
			t.Errorf("%s: %d, want %d (%s)", c.name, code, c.want, b)
		}
	}

	// A function error behind the HTTP API: kumo's payload-2.0 mapping takes
	// the error document (valid JSON, no statusCode) as a 200 body, where
	// API Gateway would answer 500 {"message":"Internal Server Error"}.
	req, err := api.NewRequest(ctx, "POST", "/turns", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token(good))
	req.Header.Set("X-Echo-Fail", "handler failed")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	t.Logf("function error through the HTTP API: %d %s", resp.StatusCode, b)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"errorMessage":"handler failed"`) {
		t.Errorf("function error through the HTTP API: %d %s", resp.StatusCode, b)
	}

	code, _, b = do("DELETE", "/turns", token(good), "")
	if code != http.StatusNotFound {
		t.Errorf("unrouted: %d %s, want 404", code, b)
	}
	if n := idpHits.Load(); n != 0 {
		t.Errorf("kumo contacted the issuer %d times", n)
	}
}

// TestKillIdleThenRestart kills a process blocked in GET .../next and starts
// a replacement under the same name: the dead poll must not swallow an
// invocation.
func TestKillIdleThenRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	endpoint := startKumo(t)
	for i := range 5 {
		f := start(t, ctx, endpoint, "phoenix", map[string]string{"ECHO_TAG": fmt.Sprint(i)}, WithTimeout(2*time.Second))
		began := time.Now()
		out, err := f.Invoke(ctx, []byte(`{}`))
		if d := time.Since(began); d > time.Second {
			t.Logf("generation %d: invoke took %v (startup %v)", i, d, f.StartupLatency())
		}
		if err != nil || !strings.Contains(string(out), fmt.Sprintf(`"tag":"%d"`, i)) {
			t.Fatalf("generation %d: %v %s", i, err, out)
		}
		if err := f.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = f.Stop()
	}
}
