package harness

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/baton-run/baton/internal/awsenv"
)

// CountingProxy is a reverse proxy in front of an AWS endpoint that counts
// the AWS requests passing through it by "service:Operation" (see
// awsenv.Counter: X-Amz-Target for DynamoDB and SQS, the method for S3).
// Give a function AWS_ENDPOINT_URL=<URL> to count what it asks of AWS.
// Lambda Runtime API requests (paths holding /_runtime/) are forwarded but
// not counted. SetHook shows a test each counted request and its response
// before the function gets it.
type CountingProxy struct {
	URL     string
	Counter *awsenv.Counter
	srv     *httptest.Server
	hook    atomic.Pointer[Hook]
}

// Hook sees a counted request, its body and the response to it before
// the function that sent it does: a test kills the function there, so
// that what the request wrote stands and the function never learns that
// it did.
type Hook func(r *http.Request, body []byte, resp *http.Response)

// SetHook sets the proxy's hook; nil removes it.
func (p *CountingProxy) SetHook(h Hook) {
	if h == nil {
		p.hook.Store(nil)
		return
	}
	p.hook.Store(&h)
}

// NewCountingProxy starts a CountingProxy forwarding to target.
func NewCountingProxy(target string) (*CountingProxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("harness: proxy target %q: not a URL", target)
	}
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("harness: http.DefaultTransport is %T, not *http.Transport", http.DefaultTransport)
	}
	next := base.Clone()
	c := &awsenv.Counter{Next: next}
	p := &CountingProxy{Counter: c}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.Contains(r.URL.Path, "/_runtime/") {
			return next.RoundTrip(r)
		}
		h := p.hook.Load()
		if h == nil || r.Body == nil {
			return c.RoundTrip(r)
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, fmt.Errorf("harness: proxy: read the request: %w", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := c.RoundTrip(r)
		if err == nil {
			(*h)(r, body, resp)
		}
		return resp, err
	})
	p.srv = httptest.NewServer(rp)
	p.URL = p.srv.URL
	return p, nil
}

// Close stops the proxy.
func (p *CountingProxy) Close() { p.srv.Close() }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
