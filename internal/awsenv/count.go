package awsenv

import (
	"maps"
	"net/http"
	"strings"
	"sync"
)

// Counter is an http.RoundTripper that counts AWS requests by service and
// operation ("dynamodb:TransactWriteItems", "s3:PutObject", "sqs:SendMessage").
// Benchmarks and tests use it to report request counts.
type Counter struct {
	Next http.RoundTripper

	mu     sync.Mutex
	counts map[string]int64
}

// RoundTrip counts req and sends it on.
func (c *Counter) RoundTrip(req *http.Request) (*http.Response, error) {
	key := Operation(req)
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[string]int64{}
	}
	c.counts[key]++
	c.mu.Unlock()
	next := c.Next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(req)
}

// Counts returns a copy of the counts so far.
func (c *Counter) Counts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Total sums the counts whose key starts with prefix ("s3:", "dynamodb:").
func (c *Counter) Total(prefix string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for k, v := range c.counts {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// Reset zeroes the counts.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.counts = nil
	c.mu.Unlock()
}

// Operation names the AWS operation req calls, as "service:Operation"
// ("dynamodb:TransactWriteItems", "s3:PutObject", "sqs:SendMessage"). S3
// operations are told apart by method alone, so every PUT is "s3:PutObject".
func Operation(req *http.Request) string {
	if t := req.Header.Get("X-Amz-Target"); t != "" {
		svc, op, _ := strings.Cut(t, ".")
		switch {
		case strings.HasPrefix(svc, "DynamoDB"):
			return "dynamodb:" + op
		case strings.HasPrefix(svc, "AmazonSQS"):
			return "sqs:" + op
		}
		return strings.ToLower(svc) + ":" + op
	}
	q := req.URL.Query()
	switch req.Method {
	case http.MethodPut:
		return "s3:PutObject"
	case http.MethodGet:
		if q.Get("list-type") == "2" {
			return "s3:ListObjectsV2"
		}
		return "s3:GetObject"
	case http.MethodHead:
		return "s3:HeadObject"
	case http.MethodDelete:
		return "s3:DeleteObject"
	}
	return "other:" + req.Method
}
