package lambdahttp

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"github.com/baton-run/baton/internal/httpjson"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Option configures Handler.
type Option func(*options)

type options struct {
	context func(context.Context, events.APIGatewayV2HTTPRequest) context.Context
	log     *slog.Logger
}

// WithContext derives each request's context from the event, for instance
// to carry the caller's identity from the authorizer's claims.
func WithContext(f func(ctx context.Context, e events.APIGatewayV2HTTPRequest) context.Context) Option {
	return func(o *options) { o.context = f }
}

// WithLogger sets the logger for events that cannot be served; the default
// discards them.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

func newOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Claim returns a claim of the event's JWT authorizer, such as "sub"; ok is
// false when the event has no JWT authorizer or no such claim.
func Claim(e events.APIGatewayV2HTTPRequest, name string) (string, bool) {
	a := e.RequestContext.Authorizer
	if a == nil || a.JWT == nil {
		return "", false
	}
	v, ok := a.JWT.Claims[name]
	return v, ok && v != ""
}

// Handler adapts h to API Gateway HTTP API events. The request carries the
// event's method, raw path and query, headers, cookies and (base64-decoded)
// body; the response carries the status, headers (several values joined
// with ","; Set-Cookie as cookies) and body, base64-encoded unless it is
// UTF-8 text. The answer is buffered whole, as API Gateway does anyway, so
// an event stream is returned as it stands when the handler returns.
func Handler(h http.Handler, opts ...Option) func(ctx context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	o := newOptions(opts)
	return func(ctx context.Context, e events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, err error) {
		if o.context != nil {
			ctx = o.context(ctx, e)
		}
		r, err := Request(ctx, e)
		if err != nil {
			o.log.WarnContext(ctx, "lambdahttp: bad event", "requestId", e.RequestContext.RequestID, "err", err)
			return textResponse(http.StatusBadRequest, "bad request\n"), nil
		}
		w := newRecorder()
		defer func() {
			// Answer like net/http's server does: a handler panic costs the
			// request, not the warm execution environment.
			if p := recover(); p != nil {
				o.log.ErrorContext(ctx, "lambdahttp: handler panicked", "requestId", e.RequestContext.RequestID,
					"method", r.Method, "path", httpjson.LogPath(r.URL.Path), "panic", fmt.Sprint(p))
				resp, err = textResponse(http.StatusInternalServerError, "internal error\n"), nil
			}
		}()
		h.ServeHTTP(w, r)
		return w.response(), nil
	}
}

// Request builds the *http.Request an event describes, with ctx as its
// context.
func Request(ctx context.Context, e events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	method := e.RequestContext.HTTP.Method
	if method == "" {
		return nil, fmt.Errorf("lambdahttp: event has no HTTP method")
	}
	path := e.RawPath
	if path == "" {
		path = e.RequestContext.HTTP.Path
	}
	// A named stage is part of the raw path; the handler's routes are not.
	if st := e.RequestContext.Stage; st != "" && st != "$default" {
		if rest, ok := strings.CutPrefix(path, "/"+st); ok && (rest == "" || rest[0] == '/') {
			path = rest
		}
	}
	if path == "" {
		path = "/"
	}
	if path[0] != '/' {
		return nil, fmt.Errorf("lambdahttp: path %q does not start with /", path)
	}
	target := path
	if e.RawQueryString != "" {
		target += "?" + e.RawQueryString
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: path %q: %w", target, err)
	}
	body := []byte(e.Body)
	if e.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(e.Body); err != nil {
			return nil, fmt.Errorf("lambdahttp: base64 body: %w", err)
		}
	}
	// The URL is u itself: printed and parsed again as a URL, a path
	// starting with "//" would turn into a host.
	r, err := http.NewRequestWithContext(ctx, method, "/", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: build request: %w", err)
	}
	r.URL = u
	r.RequestURI = u.RequestURI()
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	if p := e.RequestContext.HTTP.Protocol; p != "" {
		if major, minor, ok := http.ParseHTTPVersion(p); ok {
			r.Proto, r.ProtoMajor, r.ProtoMinor = p, major, minor
		}
	}
	for k, v := range e.Headers {
		r.Header.Set(k, v)
	}
	if len(e.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(e.Cookies, "; "))
	}
	r.Host = r.Header.Get("Host")
	if r.Host == "" {
		r.Host = e.RequestContext.DomainName
	}
	r.RemoteAddr = e.RequestContext.HTTP.SourceIP
	r.ContentLength = int64(len(body))
	if len(body) == 0 {
		r.Body = http.NoBody
	}
	return r, nil
}

// recorder is the http.ResponseWriter handlers write to; it buffers the
// whole answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Flush does nothing: API Gateway's HTTP API buffers the answer anyway, and
// gets it when the handler returns. StreamingHandler's Flush sends.
func (w *recorder) Flush() {}

func (w *recorder) response() events.APIGatewayV2HTTPResponse {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	body := w.body.Bytes()
	if w.header.Get("Content-Type") == "" && len(body) > 0 {
		w.header.Set("Content-Type", http.DetectContentType(body))
	}
	resp := events.APIGatewayV2HTTPResponse{StatusCode: status}
	resp.Headers, resp.Cookies = lambdaHeaders(w.header)
	if textual(w.header.Get("Content-Type"), body) {
		resp.Body = string(body)
	} else {
		resp.Body = base64.StdEncoding.EncodeToString(body)
		resp.IsBase64Encoded = true
	}
	return resp
}

// lambdaHeaders returns h as Lambda's response carries it: one value per
// header (several joined with ","), and Set-Cookie as cookies.
func lambdaHeaders(h http.Header) (map[string]string, []string) {
	out := map[string]string{}
	var cookies []string
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		if http.CanonicalHeaderKey(k) == "Set-Cookie" {
			cookies = append(cookies, vs...)
			continue
		}
		out[http.CanonicalHeaderKey(k)] = strings.Join(vs, ",")
	}
	return out, cookies
}

// textual reports whether a body of content type ct can travel as a
// string: UTF-8 of a text-like type.
func textual(ct string, body []byte) bool {
	if !utf8.Valid(body) {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct == ""
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript", mt == "application/x-www-form-urlencoded":
		return true
	}
	return false
}

func textResponse(status int, body string) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "text/plain; charset=utf-8"},
		Body:       body,
	}
}
