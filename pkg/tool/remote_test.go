package tool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/test/harness"
)

var schemaAny = json.RawMessage(`{"type":"object"}`)

func call(input string) Call {
	return Call{ID: "call_1", Name: "remote", Input: json.RawMessage(input), IdempotencyKey: "sess/turn/call_1"}
}

// recorded is what an httptest endpoint saw.
type recorded struct {
	mu      sync.Mutex
	method  string
	ctype   string
	idem    []string
	body    Envelope
	decoded error
}

func TestHTTPTool(t *testing.T) {
	ctx := context.Background()
	rec := &recorded{}
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.method, rec.ctype = r.Method, r.Header.Get("Content-Type")
		rec.idem = append(rec.idem, r.Header.Get("Idempotency-Key"))
		rec.decoded = json.NewDecoder(r.Body).Decode(&rec.body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"n":1}`)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "database\n\n  exploded: "+strings.Repeat("x", 1000), http.StatusInternalServerError)
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "plain \"text\" answer")
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client that hangs up only once the body
		// has been read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, _ *http.Request) {
		chunk := strings.Repeat("y", 1<<20)
		for range MaxResponseBytes>>20 + 1 {
			_, _ = io.WriteString(w, chunk)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	tool := func(path string, timeout time.Duration) Tool {
		return HTTPTool("remote", "A remote tool.", schemaAny, External, true, srv.URL+path, timeout, srv.Client())
	}

	t.Run("success", func(t *testing.T) {
		tl := tool("/ok", time.Second)
		if tl.Name != "remote" || tl.Effect != External || !tl.Idempotent || string(tl.Schema) != string(schemaAny) {
			t.Errorf("tool metadata = %+v", tl)
		}
		c := call(`{"city":"Lisbon"}`)
		for range 2 { // a retried call carries the same key
			out, err := tl.Run(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != `{"ok":true,"n":1}` {
				t.Errorf("output = %s", out)
			}
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.method != http.MethodPost {
			t.Errorf("method = %s", rec.method)
		}
		if mt, _, _ := mime.ParseMediaType(rec.ctype); mt != "application/json" {
			t.Errorf("Content-Type = %q", rec.ctype)
		}
		if len(rec.idem) != 2 || rec.idem[0] != c.IdempotencyKey || rec.idem[1] != c.IdempotencyKey {
			t.Errorf("Idempotency-Key headers = %q, want %q twice", rec.idem, c.IdempotencyKey)
		}
		if rec.decoded != nil {
			t.Fatalf("body: %v", rec.decoded)
		}
		if string(rec.body.Input) != `{"city":"Lisbon"}` || rec.body.ToolCallID != c.ID || rec.body.IdempotencyKey != c.IdempotencyKey {
			t.Errorf("envelope = %+v", rec.body)
		}
	})

	t.Run("500", func(t *testing.T) {
		_, err := tool("/fail", time.Second).Run(ctx, call(`{}`))
		var se *StatusError
		if !errors.As(err, &se) {
			t.Fatalf("err = %v, want *StatusError", err)
		}
		if se.Status != 500 || se.Tool != "remote" {
			t.Errorf("got %+v", se)
		}
		if !strings.HasPrefix(se.Body, "database exploded: xxx") || len(se.Body) > excerptBytes+len("…") {
			t.Errorf("excerpt = %q (%d bytes)", se.Body, len(se.Body))
		}
		if msg := err.Error(); !strings.Contains(msg, "500") || !strings.Contains(msg, "database exploded") {
			t.Errorf("message = %q", msg)
		}
	})

	t.Run("404 empty body", func(t *testing.T) {
		_, err := tool("/missing", time.Second).Run(ctx, call(`{}`))
		var se *StatusError
		if !errors.As(err, &se) || se.Status != 404 || se.Body != "" {
			t.Fatalf("err = %#v", err)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err := tool("/slow", 150*time.Millisecond).Run(ctx, call(`{}`))
		if err == nil || !strings.Contains(err.Error(), "no answer within 150ms") {
			t.Fatalf("err = %v, want a timeout", err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v", d)
		}
	})

	t.Run("caller cancels", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := tool("/slow", 10*time.Second).Run(cctx, call(`{}`))
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "no answer within") {
			t.Fatalf("err = %v, want the caller's cancellation", err)
		}
	})

	t.Run("non-JSON body", func(t *testing.T) {
		out, err := tool("/text", time.Second).Run(ctx, call(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var s string
		if err := json.Unmarshal(out, &s); err != nil || s != `plain "text" answer` {
			t.Errorf("output = %s (%v), want the body as a JSON string", out, err)
		}
	})

	t.Run("empty body", func(t *testing.T) {
		out, err := tool("/empty", time.Second).Run(ctx, call(`{}`))
		if err != nil || string(out) != `""` {
			t.Errorf("output = %s, %v; want an empty JSON string", out, err)
		}
	})

	t.Run("too large", func(t *testing.T) {
		_, err := tool("/huge", 10*time.Second).Run(ctx, call(`{}`))
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("empty input sends an empty object", func(t *testing.T) {
		if _, err := tool("/ok", time.Second).Run(ctx, Call{ID: "c2", IdempotencyKey: "k2"}); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if string(rec.body.Input) != `{}` {
			t.Errorf("input = %s", rec.body.Input)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		url := dead.URL
		dead.Close()
		_, err := HTTPTool("remote", "", schemaAny, Read, true, url, time.Second, nil).Run(ctx, call(`{}`))
		if err == nil || !strings.Contains(err.Error(), "tool remote") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestLambdaTool runs LambdaTool against kumo. kumo stores functions but
// does not execute them, so the test starts testdata/echofn as a real
// bootstrap polling kumo's Runtime API (test/harness).
func TestLambdaTool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a Lambda bootstrap")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// kumo's services keep their state per process, not per server, so
	// names must not repeat across runs of this test (-count).
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	emu := testenv.Emulator()
	// No retries: kumo's 502 for a function nobody runs must come back as is.
	client := harness.LambdaClient(emu.URL)

	t.Run("kumo errors", func(t *testing.T) {
		missing := "arn:aws:lambda:us-east-1:000000000000:function:nobody"
		_, err := LambdaTool("remote", "", schemaAny, Read, true, missing, time.Second, client).Run(ctx, call(`{}`))
		var nf *lambdatypes.ResourceNotFoundException
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), "tool remote") {
			t.Fatalf("err = %v, want ResourceNotFoundException from the tool", err)
		}

		// Registered but not running: kumo has nothing to execute.
		created, err := client.CreateFunction(ctx, &lambda.CreateFunctionInput{
			FunctionName: aws.String("idle-" + suffix),
			Role:         aws.String(harness.Role),
			Runtime:      lambdatypes.RuntimeProvidedal2023,
			Handler:      aws.String("bootstrap"),
			Code:         &lambdatypes.FunctionCode{ZipFile: []byte("PK\x05\x06" + strings.Repeat("\x00", 18))},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = LambdaTool("remote", "", schemaAny, Read, true, aws.ToString(created.FunctionArn), time.Second, client).Run(ctx, call(`{}`))
		if err == nil || !strings.Contains(err.Error(), "no runtime handler") {
			t.Fatalf("err = %v, want kumo's no-handler error", err)
		}
	})

	bin, err := harness.BuildBootstrap(ctx, "./pkg/tool/testdata/echofn", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fn, err := harness.StartFunction(ctx, emu.URL, "echofn-"+suffix, bin, nil, harness.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fn.Stop() })
	// The harness's Invoke waits out kumo's registration of the poller.
	if _, err := fn.Invoke(ctx, []byte(`{"input":{}}`)); err != nil {
		t.Fatal(err)
	}
	tool := func(timeout time.Duration) Tool {
		return LambdaTool("remote", "A Lambda tool.", schemaAny, Write, false, fn.ARN, timeout, client)
	}

	t.Run("success", func(t *testing.T) {
		tl := tool(5 * time.Second)
		if tl.Name != "remote" || tl.Effect != Write || tl.Idempotent {
			t.Errorf("tool metadata = %+v", tl)
		}
		c := call(`{"city":"Lisbon"}`)
		out, err := tl.Run(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		var got Envelope
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("output %s: %v", out, err)
		}
		if string(got.Input) != `{"city":"Lisbon"}` || got.ToolCallID != c.ID || got.IdempotencyKey != c.IdempotencyKey {
			t.Errorf("the function saw %+v", got)
		}
	})

	t.Run("function error", func(t *testing.T) {
		_, err := tool(5*time.Second).Run(ctx, call(`{"fail":"card declined"}`))
		var fe *FunctionError
		if !errors.As(err, &fe) {
			t.Fatalf("err = %v, want *FunctionError", err)
		}
		if fe.Kind != "Unhandled" || fe.Message != "card declined" || fe.Tool != "remote" {
			t.Errorf("got %+v", fe)
		}
		if !strings.Contains(err.Error(), "card declined") {
			t.Errorf("message = %q", err)
		}
	})

	t.Run("non-JSON payload", func(t *testing.T) {
		_, err := tool(5*time.Second).Run(ctx, call(`{"raw":"<html>oops</html>"}`))
		if err == nil || !strings.Contains(err.Error(), "non-JSON payload") || !strings.Contains(err.Error(), "<html>oops") {
			t.Fatalf("err = %v, want a non-JSON payload error", err)
		}
	})

	// Last: the function is still sleeping when the tool gives up.
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err := tool(300*time.Millisecond).Run(ctx, call(`{"sleep_ms":2000}`))
		if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Fatalf("err = %v, want a timeout", err)
		}
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("took %v", d)
		}
	})
}

func TestLambdaToolNoClient(t *testing.T) {
	_, err := LambdaTool("remote", "", schemaAny, Read, true, "arn", 0, nil).Run(context.Background(), call(`{}`))
	if err == nil || !strings.Contains(err.Error(), "no Lambda client") {
		t.Fatalf("err = %v", err)
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é", 300)
	got := excerpt([]byte(long))
	if !strings.HasSuffix(got, "…") || len(got) > excerptBytes+len("…") {
		t.Errorf("excerpt is %d bytes: %q", len(got), got)
	}
	if s := strings.TrimSuffix(got, "…"); !strings.HasPrefix(long, s) {
		t.Errorf("excerpt %q is not a prefix on a rune boundary", got)
	}
	if got := excerpt([]byte(" a\n\tb  ")); got != "a b" {
		t.Errorf("excerpt = %q", got)
	}
}
