package lambdahttp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func urlEvent(method, path string) events.APIGatewayV2HTTPRequest {
	e := events.APIGatewayV2HTTPRequest{RawPath: path}
	e.RequestContext.HTTP.Method = method
	e.RequestContext.DomainName = "abcdefghij.lambda-url.us-east-1.on.aws"
	return e
}

// prelude reads the HTTP integration prelude the runtime sends first: JSON,
// then eight NUL bytes.
func prelude(t *testing.T, br *bufio.Reader) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	for !bytes.HasSuffix(buf.Bytes(), make([]byte, 8)) {
		b, err := br.ReadByte()
		if err != nil {
			t.Fatalf("prelude: %v after %q", err, buf.Bytes())
		}
		buf.WriteByte(b)
	}
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimRight(buf.Bytes(), "\x00"), &m); err != nil {
		t.Fatalf("prelude %q: %v", buf.Bytes(), err)
	}
	return m
}

// TestStreamingFlushSends: what the handler flushed reaches the reader
// while the handler is still running, headers and status first.
func TestStreamingFlushSends(t *testing.T) {
	step := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		http.SetCookie(w, &http.Cookie{Name: "a", Value: "1"})
		w.WriteHeader(http.StatusAccepted)
		for _, s := range []string{"data: one\n\n", "data: two\n\n"} {
			_, _ = io.WriteString(w, s)
			w.(http.Flusher).Flush()
			<-step // the reader has seen it before the handler goes on
		}
	})
	resp, err := StreamingHandler(h)(t.Context(), urlEvent("GET", "/chat/x/stream"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted || resp.Headers["Content-Type"] != "text/event-stream" || len(resp.Cookies) != 1 {
		t.Fatalf("head %d %v %v", resp.StatusCode, resp.Headers, resp.Cookies)
	}
	br := bufio.NewReader(resp)
	if m := prelude(t, br); m["statusCode"] != float64(http.StatusAccepted) {
		t.Fatalf("prelude %v", m)
	}
	for _, want := range []string{"data: one", "", "data: two", ""} {
		line, err := br.ReadString('\n')
		if err != nil || strings.TrimSuffix(line, "\n") != want {
			t.Fatalf("read %q, %v; want %q", line, err, want)
		}
		if want == "" {
			step <- struct{}{}
		}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the handler: %q, %v", rest, err)
	}
}

// TestStreamingClientGone: once the runtime stops reading, the handler's
// context is cancelled and its writes fail.
func TestStreamingClientGone(t *testing.T) {
	gone := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: hello\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		_, err := io.WriteString(w, strings.Repeat("x", streamBuffer+1))
		gone <- err
	})
	resp, err := StreamingHandler(h)(t.Context(), urlEvent("GET", "/s"))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp)
	prelude(t, br)
	if line, _ := br.ReadString('\n'); line != "data: hello\n" {
		t.Fatalf("read %q", line)
	}
	_ = resp.Close()
	if err := <-gone; err == nil {
		t.Fatal("a write after the client went away succeeded")
	}
}

// TestStreamingPanics: a panic before anything is sent answers 500; one
// after cuts the stream with an error.
func TestStreamingPanics(t *testing.T) {
	early := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	resp, err := StreamingHandler(early)(t.Context(), urlEvent("GET", "/p"))
	if err != nil || resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("early panic: %v %+v", err, resp)
	}
	late := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic("boom")
	})
	resp, err = StreamingHandler(late)(t.Context(), urlEvent("GET", "/p"))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("late panic: %v %+v", err, resp)
	}
	if _, err := io.ReadAll(resp); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("a stream cut by a panic read to the end: %v", err)
	}
}

func TestFunctionURL(t *testing.T) {
	if !FunctionURL(urlEvent("GET", "/")) {
		t.Error("a lambda-url domain is not a Function URL")
	}
	e := urlEvent("GET", "/")
	e.RequestContext.DomainName = "abc.execute-api.eu-west-1.amazonaws.com"
	if FunctionURL(e) {
		t.Error("an execute-api domain is a Function URL")
	}
}
