package harness

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/baton-run/baton/pkg/awsenv"
)

// CountingProxy is a reverse proxy in front of an AWS endpoint that counts
// the AWS requests passing through it by "service:Operation" (see
// awsenv.Counter: X-Amz-Target for DynamoDB and SQS, the method for S3).
// Give a function AWS_ENDPOINT_URL=<URL> to count what it asks of AWS.
// Lambda Runtime API requests (paths holding /_runtime/) are forwarded but
// not counted.
type CountingProxy struct {
	URL     string
	Counter *awsenv.Counter
	srv     *httptest.Server
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
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.Contains(r.URL.Path, "/_runtime/") {
			return next.RoundTrip(r)
		}
		return c.RoundTrip(r)
	})
	srv := httptest.NewServer(rp)
	return &CountingProxy{URL: srv.URL, Counter: c, srv: srv}, nil
}

// Close stops the proxy.
func (p *CountingProxy) Close() { p.srv.Close() }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
