package lambdahttp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

type subKey struct{}

// withSub is the option a real function passes: the JWT subject into the
// request context.
var withSub = WithContext(func(ctx context.Context, e events.APIGatewayV2HTTPRequest) context.Context {
	if sub, ok := Claim(e, "sub"); ok {
		return context.WithValue(ctx, subKey{}, sub)
	}
	return ctx
})

func fixture(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var e events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// echo answers with what it saw of the request.
type seen struct {
	Method, Path, RawPath, RawQuery, RequestURI, Host, RemoteAddr, Proto string
	Tags                                                                 []string
	ContentType, Multi, Cookie, Theme, Body, Sub                         string
	ContentLength                                                        int64
}

func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s := seen{
		Method: r.Method, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery,
		RequestURI: r.RequestURI, Host: r.Host, RemoteAddr: r.RemoteAddr, Proto: r.Proto,
		Tags: r.URL.Query()["tag"], ContentType: r.Header.Get("Content-Type"), Multi: r.Header.Get("X-Multi"),
		Cookie: r.Header.Get("Cookie"), Body: string(body), ContentLength: r.ContentLength,
	}
	if c, err := r.Cookie("theme"); err == nil {
		s.Theme = c.Value
	}
	s.Sub, _ = r.Context().Value(subKey{}).(string)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Add("Vary", "Accept")
	w.Header().Add("Vary", "Authorization")
	http.SetCookie(w, &http.Cookie{Name: "a", Value: "1"})
	http.SetCookie(w, &http.Cookie{Name: "b", Value: "2"})
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(s)
}

func TestFixtureRoundTrips(t *testing.T) {
	e := fixture(t, "post-message.json")
	resp, err := Handler(http.HandlerFunc(echo), withSub)(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d, want 202; body %s", resp.StatusCode, resp.Body)
	}
	if resp.IsBase64Encoded {
		t.Fatalf("JSON answer was base64-encoded: %s", resp.Body)
	}
	var got seen
	if err := json.Unmarshal([]byte(resp.Body), &got); err != nil {
		t.Fatalf("body %q: %v", resp.Body, err)
	}
	want := seen{
		Method: "POST", Path: "/sessions/s_0193a1b2c3d4e5f60718293a4b5c6d7e/messages",
		RawQuery:   "trace=1&tag=a&tag=b%20c",
		RequestURI: "/sessions/s_0193a1b2c3d4e5f60718293a4b5c6d7e/messages?trace=1&tag=a&tag=b%20c",
		Host:       "abc123defg.execute-api.eu-west-1.amazonaws.com", RemoteAddr: "203.0.113.7", Proto: "HTTP/1.1",
		Tags: []string{"a", "b c"}, ContentType: "application/json; charset=utf-8", Multi: "one,two",
		Cookie: "theme=dark; lang=en", Theme: "dark",
		Body: `{"text":"café ☕ deploy?"}`, ContentLength: int64(len(`{"text":"café ☕ deploy?"}`)),
		Sub: "user-42",
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("handler saw\n %s\nwant\n %s", gj, wj)
	}
	if v := resp.Headers["Vary"]; v != "Accept,Authorization" {
		t.Errorf("Vary = %q, want the values joined with a comma", v)
	}
	if ct := resp.Headers["Content-Type"]; ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if _, ok := resp.Headers["Set-Cookie"]; ok {
		t.Errorf("Set-Cookie left in the headers: %v", resp.Headers)
	}
	if strings.Join(resp.Cookies, " ") != "a=1 b=2" {
		t.Errorf("cookies = %q, want [a=1 b=2]", resp.Cookies)
	}
}

func TestNoAuthorizerMeansNoIdentity(t *testing.T) {
	e := fixture(t, "post-message.json")
	e.RequestContext.Authorizer = nil
	e.IsBase64Encoded, e.Body = false, `{"text":"plain"}`
	resp, err := Handler(http.HandlerFunc(echo), withSub)(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	var got seen
	if err := json.Unmarshal([]byte(resp.Body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Sub != "" || got.Body != `{"text":"plain"}` {
		t.Errorf("sub %q body %q: want no identity and the plain body", got.Sub, got.Body)
	}
	if _, ok := Claim(e, "sub"); ok {
		t.Error("Claim found a sub without an authorizer")
	}
}

func TestBinaryAnswerIsBase64(t *testing.T) {
	bin := []byte{0x89, 'P', 'N', 'G', 0xff, 0x00, 0xfe}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(bin)
	})
	e := fixture(t, "post-message.json")
	resp, err := Handler(h)(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !resp.IsBase64Encoded {
		t.Fatalf("status %d base64 %v, want 200 and base64", resp.StatusCode, resp.IsBase64Encoded)
	}
	got, err := base64.StdEncoding.DecodeString(resp.Body)
	if err != nil || string(got) != string(bin) {
		t.Errorf("body decodes to %x (%v), want %x", got, err, bin)
	}
}

func TestEventStreamIsReturnedWhole(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 0.0\ndata: {\"type\":\"start\"}\n\n")
		http.NewResponseController(w).Flush()
		_, _ = io.WriteString(w, "event: close\ndata: [DONE]\n\n")
	})
	e := fixture(t, "post-message.json")
	e.RequestContext.HTTP.Method, e.Body, e.IsBase64Encoded = "GET", "", false
	resp, err := Handler(h)(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	want := "id: 0.0\ndata: {\"type\":\"start\"}\n\nevent: close\ndata: [DONE]\n\n"
	if resp.Body != want || resp.IsBase64Encoded {
		t.Errorf("body %q (base64 %v), want %q", resp.Body, resp.IsBase64Encoded, want)
	}
}

func TestNamedStageIsStripped(t *testing.T) {
	e := fixture(t, "post-message.json")
	e.RequestContext.Stage = "prod"
	e.RawPath = "/prod" + e.RawPath
	resp, err := Handler(http.HandlerFunc(echo))(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	var got seen
	if err := json.Unmarshal([]byte(resp.Body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Path != "/sessions/s_0193a1b2c3d4e5f60718293a4b5c6d7e/messages" {
		t.Errorf("path %q: stage not stripped", got.Path)
	}
}

func TestEncodedPathKeepsItsEscapes(t *testing.T) {
	e := fixture(t, "post-message.json")
	e.RawPath = "/files/a%2Fb"
	resp, err := Handler(http.HandlerFunc(echo))(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	var got seen
	if err := json.Unmarshal([]byte(resp.Body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Path != "/files/a/b" || got.RawPath != "/files/a%2Fb" {
		t.Errorf("path %q raw %q", got.Path, got.RawPath)
	}
}

func TestBadEventsAndPanicsAnswer(t *testing.T) {
	e := fixture(t, "post-message.json")
	e.Body = "not base64!"
	called := false
	resp, err := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))(t.Context(), e)
	if err != nil || resp.StatusCode != http.StatusBadRequest || called {
		t.Errorf("bad base64: status %d err %v called %v, want 400 without calling the handler", resp.StatusCode, err, called)
	}

	e = fixture(t, "post-message.json")
	resp, err = Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Partial", "yes")
		panic("boom")
	}))(t.Context(), e)
	if err != nil || resp.StatusCode != http.StatusInternalServerError || resp.Headers["X-Partial"] != "" {
		t.Errorf("panic: status %d err %v headers %v, want a clean 500", resp.StatusCode, err, resp.Headers)
	}

	e = fixture(t, "post-message.json")
	resp, err = Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))(t.Context(), e)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Body != "" {
		t.Errorf("silent handler: status %d body %q err %v, want an empty 200", resp.StatusCode, resp.Body, err)
	}
}
