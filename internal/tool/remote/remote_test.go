package remote

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/tool"
)

var schemaAny = json.RawMessage(`{"type":"object"}`)

func call(input string) tool.Call {
	return tool.Call{ID: "call_1", Name: "remote", Input: json.RawMessage(input), IdempotencyKey: "sess/turn/call_1"}
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
	mk := func(path string, timeout time.Duration) tool.Tool {
		return HTTPTool("remote", "A remote tool.", schemaAny, tool.External, true, srv.URL+path, timeout, srv.Client())
	}

	t.Run("success", func(t *testing.T) {
		tl := mk("/ok", time.Second)
		if tl.Name != "remote" || tl.Effect != tool.External || !tl.Idempotent || string(tl.Schema) != string(schemaAny) {
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
		_, err := mk("/fail", time.Second).Run(ctx, call(`{}`))
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
		_, err := mk("/missing", time.Second).Run(ctx, call(`{}`))
		var se *StatusError
		if !errors.As(err, &se) || se.Status != 404 || se.Body != "" {
			t.Fatalf("err = %#v", err)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err := mk("/slow", 150*time.Millisecond).Run(ctx, call(`{}`))
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
		_, err := mk("/slow", 10*time.Second).Run(cctx, call(`{}`))
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "no answer within") {
			t.Fatalf("err = %v, want the caller's cancellation", err)
		}
	})

	t.Run("non-JSON body", func(t *testing.T) {
		out, err := mk("/text", time.Second).Run(ctx, call(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var s string
		if err := json.Unmarshal(out, &s); err != nil || s != `plain "text" answer` {
			t.Errorf("output = %s (%v), want the body as a JSON string", out, err)
		}
	})

	t.Run("empty body", func(t *testing.T) {
		out, err := mk("/empty", time.Second).Run(ctx, call(`{}`))
		if err != nil || string(out) != `""` {
			t.Errorf("output = %s, %v; want an empty JSON string", out, err)
		}
	})

	t.Run("too large", func(t *testing.T) {
		_, err := mk("/huge", 10*time.Second).Run(ctx, call(`{}`))
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("empty input sends an empty object", func(t *testing.T) {
		if _, err := mk("/ok", time.Second).Run(ctx, tool.Call{ID: "c2", IdempotencyKey: "k2"}); err != nil {
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
		_, err := HTTPTool("remote", "", schemaAny, tool.Read, true, url, time.Second, nil).Run(ctx, call(`{}`))
		if err == nil || !strings.Contains(err.Error(), "tool remote") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestLambdaToolNoInvoker: a program that registered no Lambda invoker
// (the operator, the tick) still makes lambda tools, and a call fails the
// turn saying what to register. The invoker is tested against kumo in
// package providers/awslambda.
func TestLambdaToolNoInvoker(t *testing.T) {
	_, err := LambdaTool("remote", "", schemaAny, tool.Read, true, "arn", 0, nil).Run(context.Background(), call(`{}`))
	if !errors.Is(err, ErrNoLambdaInvoker) || tool.KindOf(err) != tool.Fatal || !strings.Contains(err.Error(), "tool remote") {
		t.Fatalf("err = %v (%v), want a fatal ErrNoLambdaInvoker naming the tool", err, tool.KindOf(err))
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

// TestHTTPToolTransient: an answer that says the request was not served
// (429, 502, 503, 504) and an endpoint that cannot be reached are
// tool.Transient, for the tool's Retry policy; any other status is the model's.
func TestHTTPToolTransient(t *testing.T) {
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer srv.Close()
	for code, want := range map[int]tool.ErrorKind{429: tool.Transient, 502: tool.Transient, 503: tool.Transient, 504: tool.Transient, 400: tool.ForModel, 404: tool.ForModel, 500: tool.ForModel} {
		status.Store(int32(code))
		_, err := HTTPTool("remote", "", schemaAny, tool.Write, false, srv.URL, time.Second, nil).Run(context.Background(), call(`{}`))
		var se *StatusError
		if !errors.As(err, &se) || se.Status != code || tool.KindOf(err) != want {
			t.Errorf("HTTP %d: err = %v (%v), want a StatusError of kind %v", code, err, tool.KindOf(err), want)
		}
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	_, err := HTTPTool("remote", "", schemaAny, tool.Write, false, dead.URL, time.Second, nil).Run(context.Background(), call(`{}`))
	if tool.KindOf(err) != tool.Transient {
		t.Errorf("unreachable: err = %v (%v), want Transient", err, tool.KindOf(err))
	}
}
