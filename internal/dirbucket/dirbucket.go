// Package dirbucket makes a general purpose bucket of the emulator behave,
// for the requests baton sends, like an S3 Express One Zone directory
// bucket: an http.RoundTripper between the AWS SDK and the emulator that
// answers ListObjectsV2 in shuffled order (directory buckets do not list
// keys in order) and refuses, with 400 InvalidArgument as S3 does, a
// listing that carries start-after or a prefix not ending in "/".
// Everything else (conditional PutObject with If-None-Match, GetObject,
// HeadObject) passes through to the emulator unchanged, since directory
// buckets support it.
//
// kumo cannot create directory buckets, and the SDK would route a
// …--x-s3 bucket to a zonal endpoint with session authentication, so tests
// provision a normal bucket and apply the directory rules here.
package dirbucket

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Transport applies the directory-bucket listing rules to the requests it
// passes to Next (http.DefaultTransport when nil). It is safe for
// concurrent use.
type Transport struct {
	Next http.RoundTripper

	mu       sync.Mutex
	rnd      *rand.Rand
	shuffled int
	refused  int
}

// New returns a Transport on next whose shuffles follow seed.
func New(next http.RoundTripper, seed uint64) *Transport {
	return &Transport{Next: next, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Client returns an *http.Client for aws.Config.HTTPClient or the S3
// options' HTTPClient.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// Shuffled is how many listings with two or more keys it reordered.
func (t *Transport) Shuffled() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.shuffled
}

// Refused is how many listings it refused.
func (t *Transport) Refused() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if req.Method != http.MethodGet || q.Get("list-type") != "2" {
		return t.next().RoundTrip(req)
	}
	if q.Has("start-after") {
		return t.refuse(req, "StartAfter is not supported for directory buckets")
	}
	if p := q.Get("prefix"); p != "" && !strings.HasSuffix(p, "/") {
		return t.refuse(req, "Prefix must end with the delimiter / for directory buckets")
	}
	resp, err := t.next().RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("dirbucket: read listing: %w", err)
	}
	body = t.shuffle(body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

func (t *Transport) next() http.RoundTripper {
	if t.Next == nil {
		return http.DefaultTransport
	}
	return t.Next
}

var contents = regexp.MustCompile(`(?s)<Contents>.*?</Contents>`)

// shuffle reorders the <Contents> entries of a ListObjectsV2 answer; two or
// more always end up out of their original order.
func (t *Transport) shuffle(body []byte) []byte {
	loc := contents.FindAllIndex(body, -1)
	if len(loc) < 2 {
		return body
	}
	for i := 1; i < len(loc); i++ {
		if len(bytes.TrimSpace(body[loc[i-1][1]:loc[i][0]])) != 0 {
			return body // something between entries: leave it alone
		}
	}
	entries := make([][]byte, len(loc))
	for i, l := range loc {
		entries[i] = body[l[0]:l[1]]
	}
	t.mu.Lock()
	order := t.rnd.Perm(len(entries))
	t.shuffled++
	t.mu.Unlock()
	if sorted(order) {
		for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
			order[i], order[j] = order[j], order[i]
		}
	}
	var out bytes.Buffer
	out.Write(body[:loc[0][0]])
	for _, i := range order {
		out.Write(entries[i])
	}
	out.Write(body[loc[len(loc)-1][1]:])
	return out.Bytes()
}

func sorted(order []int) bool {
	for i, v := range order {
		if v != i {
			return false
		}
	}
	return true
}

// refuse answers 400 InvalidArgument as S3 does, without sending req.
func (t *Transport) refuse(req *http.Request, msg string) (*http.Response, error) {
	t.mu.Lock()
	t.refused++
	t.mu.Unlock()
	if req.Body != nil {
		req.Body.Close()
	}
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+
		`<Error><Code>InvalidArgument</Code><Message>%s</Message><RequestId>dirbucket</RequestId></Error>`, msg)
	return &http.Response{
		Status:        "400 Bad Request",
		StatusCode:    http.StatusBadRequest,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/xml"}, "Content-Length": {strconv.Itoa(len(body))}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}
