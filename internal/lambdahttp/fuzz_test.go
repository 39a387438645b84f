package lambdahttp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// checkEvent runs e through Request and Handler and checks the invariants:
// Request refuses an event with an error naming the package, or builds a
// request that says what the event says (method, path, query, body); the
// handler answers every event, a refused one with 400, and never with an
// error.
func checkEvent(t *testing.T, e events.APIGatewayV2HTTPRequest) {
	t.Helper()
	r, err := Request(t.Context(), e)
	var served bool
	resp, herr := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served = true
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write([]byte(r.URL.Path))
	}), WithLogger(slog.New(slog.DiscardHandler)))(t.Context(), e)
	if herr != nil {
		t.Fatalf("Handler returned an error: %v", herr)
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), "lambdahttp: ") {
			t.Fatalf("unclear error %q", err)
		}
		if served || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("a refused event was served (%v) or answered %d", served, resp.StatusCode)
		}
		return
	}
	if !served || resp.StatusCode != http.StatusOK || !resp.IsBase64Encoded {
		t.Fatalf("a good event: served %v, answer %+v", served, resp)
	}
	if r.Method != e.RequestContext.HTTP.Method {
		t.Fatalf("method %q, event says %q", r.Method, e.RequestContext.HTTP.Method)
	}
	// The request's URL is the path and query of the event, parsed as a
	// request URI, and nothing else: no host or scheme taken from the path.
	path := e.RawPath
	if path == "" {
		path = e.RequestContext.HTTP.Path
	}
	if st := e.RequestContext.Stage; st != "" && st != "$default" {
		if rest, ok := strings.CutPrefix(path, "/"+st); ok && (rest == "" || rest[0] == '/') {
			path = rest
		}
	}
	if path == "" {
		path = "/"
	}
	target := path
	if e.RawQueryString != "" {
		target += "?" + e.RawQueryString
	}
	want, err := url.ParseRequestURI(target)
	if err != nil {
		t.Fatalf("Request accepted %q, which is not a request URI: %v", target, err)
	}
	if r.URL.Scheme != "" || r.URL.Host != "" || r.URL.Path != want.Path || r.URL.RawQuery != want.RawQuery {
		t.Fatalf("event path %q gives URL scheme %q host %q path %q query %q; want path %q query %q",
			target, r.URL.Scheme, r.URL.Host, r.URL.Path, r.URL.RawQuery, want.Path, want.RawQuery)
	}
	if r.RequestURI != want.RequestURI() {
		t.Fatalf("RequestURI %q, want %q", r.RequestURI, want.RequestURI())
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	wantBody := []byte(e.Body)
	if e.IsBase64Encoded {
		wantBody, _ = base64.StdEncoding.DecodeString(e.Body)
	}
	if !bytes.Equal(body, wantBody) || r.ContentLength != int64(len(wantBody)) {
		t.Fatalf("body %q (length %d), want %q", body, r.ContentLength, wantBody)
	}
	if got, _ := base64.StdEncoding.DecodeString(resp.Body); string(got) != r.URL.Path {
		t.Fatalf("answer %q, want the path %q", got, r.URL.Path)
	}
}

// FuzzRequest builds events from fuzzed fields: method, raw path, query,
// stage, body (base64 or not) and one header.
func FuzzRequest(f *testing.F) {
	f.Add("POST", "/sessions/s_0193a1b2c3d4e5f60718293a4b5c6d7e/messages", "trace=1&tag=a&tag=b%20c", "$default", `{"text":"café ☕ deploy?"}`, false, "content-type", "application/json")
	f.Add("GET", "/prod/sessions", "limit=10&cursor=eyJwayI6eyJTIjoieCJ9fQ", "prod", "", false, "accept", "text/event-stream")
	f.Add("POST", "/sessions", "", "", "eyJhZ2VudCI6ImRlbW8ifQ==", true, "Content-Type", "application/json")
	f.Add("GET", "//evil.example/sessions", "", "", "", false, "host", "x")
	f.Add("GET", "/a b", "x=%zz", "", "", false, "", "")
	f.Add("GET", "", "", "", "!!", true, "", "")
	f.Add("GE T", "/", "", "", "", false, "a\nb", "c\r\nd")
	f.Add("GET", "/prod//x", "", "prod", "", false, "", "")
	f.Fuzz(func(t *testing.T, method, path, query, stage, body string, b64 bool, hk, hv string) {
		e := events.APIGatewayV2HTTPRequest{RawPath: path, RawQueryString: query, Body: body, IsBase64Encoded: b64}
		e.RequestContext.HTTP.Method = method
		e.RequestContext.Stage = stage
		e.RequestContext.DomainName = "abc123defg.execute-api.eu-west-1.amazonaws.com"
		if hk != "" {
			e.Headers = map[string]string{hk: hv}
		}
		checkEvent(t, e)
	})
}

// FuzzEvent decodes fuzzed API Gateway v2 events from JSON, as the Lambda
// runtime does, starting from a real one.
func FuzzEvent(f *testing.F) {
	real, err := os.ReadFile("testdata/post-message.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add([]byte(`{"rawPath":"//h/p","requestContext":{"http":{"method":"GET"}}}`))
	f.Add([]byte(`{"rawPath":"/x","isBase64Encoded":true,"body":"%%%","requestContext":{"http":{"method":"POST"}}}`))
	f.Add([]byte(`{"requestContext":{"http":{"method":"GET","path":"/p","protocol":"HTTP/9.9"},"stage":"p"}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e events.APIGatewayV2HTTPRequest
		if json.Unmarshal(data, &e) != nil {
			return // the runtime refuses what does not decode
		}
		if !utf8.ValidString(e.RawPath) {
			return // JSON strings decode to UTF-8
		}
		checkEvent(t, e)
	})
}
