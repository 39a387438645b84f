package faults

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/baton-run/baton/internal/awsenv"
)

// Kind is a fault the Transport injects.
type Kind string

// The faults. Error responses take the shape of the request's protocol: AWS
// JSON (DynamoDB, SQS: x-amzn-errortype and __type) or S3's XML.
const (
	// Throughput answers 400 ProvisionedThroughputExceededException
	// (S3: 503 SlowDown).
	Throughput Kind = "throughput"
	// Throttling answers 400 ThrottlingException (S3: 503 SlowDown).
	Throttling Kind = "throttling"
	// SlowDown answers S3's 503 SlowDown (JSON services: 503
	// ServiceUnavailable).
	SlowDown Kind = "slowdown"
	// ServerError answers 500 InternalServerError (S3: InternalError).
	ServerError Kind = "500"
	// Timeout does not send the request: it waits Transport.Delay, or until
	// the request's context ends, then fails with a network timeout.
	Timeout Kind = "timeout"
	// LostResponse sends the request to the store, then drops the answer
	// and fails with a connection reset: the write happened, the caller
	// sees an error.
	LostResponse Kind = "lost"
	// Stall holds the request, unsent, the way a stopped store does: for
	// Transport.Delay, then sends it on (the store is back), or, with no
	// Delay, until the request's context ends, failing with its error.
	Stall Kind = "stall"
	// CutShort sends the request to the store and cuts its answer short:
	// the response body ends halfway with io.ErrUnexpectedEOF, as when a
	// connection drops mid-answer. Meant for reads; on a write, the write
	// happened.
	CutShort Kind = "cut"
	// Conflict answers a DynamoDB write as a lost race would: a
	// TransactWriteItems with TransactionCanceledException whose reason is
	// ConditionalCheckFailed, any other write with
	// ConditionalCheckFailedException. Nothing is written. Meant for
	// DynamoDB only.
	Conflict Kind = "conflict"
)

// Rule injects Fault into the requests it matches.
type Rule struct {
	// Op matches the operation as awsenv.Operation names it
	// ("dynamodb:TransactWriteItems"); a value ending in ":" matches a whole
	// service ("s3:"); "" matches every request.
	Op string
	// Path, when set, must occur in the request's URL path (an S3 key
	// prefix, say: "/streams/" or "/snapshots/").
	Path string
	// Body, when set, must occur in the request body (a fact type in a
	// TransactWriteItems, say: "turn.started").
	Body string
	// After lets this many matching requests through before the first
	// fault.
	After int
	// Times is how many matching requests get the fault; 0 means all of
	// them from then on (a persistent fault).
	Times int
	Fault Kind
}

// DefaultDelay is how long a Timeout fault waits when Transport.Delay is 0.
const DefaultDelay = 20 * time.Millisecond

// Transport is an http.RoundTripper between AWS SDK clients and a real
// endpoint that injects faults by rule. It is safe for concurrent use.
type Transport struct {
	// Next sends the requests that are let through; nil means
	// http.DefaultTransport.
	Next http.RoundTripper
	// Delay is how long a Timeout fault waits (0 means DefaultDelay) and
	// how long a Stall holds a request (0 means until its context ends).
	Delay time.Duration

	mu       sync.Mutex
	rules    []*state
	injected []Injection
}

type state struct {
	Rule
	seen, hit int
}

// Injection records one injected fault.
type Injection struct {
	Op    string
	Fault Kind
}

// New returns a Transport sending through next with rules in force.
func New(next http.RoundTripper, rules ...Rule) *Transport {
	t := &Transport{Next: next}
	t.Set(rules...)
	return t
}

// Set replaces the rules, with fresh counts. No rules let everything
// through.
func (t *Transport) Set(rules ...Rule) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = t.rules[:0]
	for _, r := range rules {
		t.rules = append(t.rules, &state{Rule: r})
	}
}

// Injected returns the faults injected so far, in order.
func (t *Transport) Injected() []Injection {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Injection(nil), t.injected...)
}

// Count returns how many faults were injected into requests for op.
func (t *Transport) Count(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, in := range t.injected {
		if in.Op == op {
			n++
		}
	}
	return n
}

// RoundTrip applies the first rule that matches req and is due, or sends
// req on.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	op := awsenv.Operation(req)
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	fault, ok := t.pick(op, req.URL.Path, body)
	if !ok {
		return t.next().RoundTrip(req)
	}
	switch fault {
	case LostResponse:
		resp, err := t.next().RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	case Stall:
		return t.stall(req)
	case CutShort:
		return t.cutShort(req)
	case Timeout:
		closeBody(req)
		d := t.Delay
		if d <= 0 {
			d = DefaultDelay
		}
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(d):
		}
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}
	}
	closeBody(req)
	return respond(req, op, fault), nil
}

// stall holds req until Delay passes, then sends it on; with no Delay, or
// should req's context end first, it fails with the context's error.
func (t *Transport) stall(req *http.Request) (*http.Response, error) {
	var after <-chan time.Time
	if t.Delay > 0 {
		timer := time.NewTimer(t.Delay)
		defer timer.Stop()
		after = timer.C
	}
	select {
	case <-req.Context().Done():
		closeBody(req)
		return nil, req.Context().Err()
	case <-after:
		return t.next().RoundTrip(req)
	}
}

// cutShort sends req on and returns its answer with the body cut halfway,
// ending in io.ErrUnexpectedEOF.
func (t *Transport) cutShort(req *http.Request) (*http.Response, error) {
	resp, err := t.next().RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("faults: read the answer to cut: %w", err)
	}
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:len(body)/2]), eofReader{}))
	return resp, nil
}

// eofReader fails every read with io.ErrUnexpectedEOF.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func (t *Transport) next() http.RoundTripper {
	if t.Next != nil {
		return t.Next
	}
	return http.DefaultTransport
}

// pick counts the request against the matching rules and returns the
// fault of the first one due.
func (t *Transport) pick(op, path string, body []byte) (Kind, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.rules {
		if !r.matches(op, path, body) {
			continue
		}
		r.seen++
		if r.seen <= r.After || (r.Times > 0 && r.hit >= r.Times) {
			continue
		}
		r.hit++
		t.injected = append(t.injected, Injection{Op: op, Fault: r.Fault})
		return r.Fault, true
	}
	return "", false
}

func (r *state) matches(op, path string, body []byte) bool {
	switch {
	case r.Op != "" && r.Op != op && !(strings.HasSuffix(r.Op, ":") && strings.HasPrefix(op, r.Op)):
		return false
	case r.Path != "" && !strings.Contains(path, r.Path):
		return false
	case r.Body != "" && !bytes.Contains(body, []byte(r.Body)):
		return false
	}
	return true
}

// readBody reads the request body and puts it back, so it can be matched
// and still sent.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("faults: read request body: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// respond builds the error response for fault in the request's protocol.
func respond(req *http.Request, op string, fault Kind) *http.Response {
	jsonProto := req.Header.Get("X-Amz-Target") != ""
	var status int
	var code string
	extra := ""
	switch {
	case fault == Conflict && op == "dynamodb:TransactWriteItems":
		status, code = http.StatusBadRequest, "TransactionCanceledException"
		extra = `,"CancellationReasons":[{"Code":"ConditionalCheckFailed","Message":"The conditional request failed"}]`
	case fault == Conflict:
		status, code = http.StatusBadRequest, "ConditionalCheckFailedException"
	case fault == ServerError && jsonProto:
		status, code = http.StatusInternalServerError, "InternalServerError"
	case fault == ServerError:
		status, code = http.StatusInternalServerError, "InternalError"
	case !jsonProto: // S3 throttles with 503 SlowDown, whatever the kind
		status, code = http.StatusServiceUnavailable, "SlowDown"
	case fault == SlowDown:
		status, code = http.StatusServiceUnavailable, "ServiceUnavailable"
	case fault == Throughput:
		status, code = http.StatusBadRequest, "ProvisionedThroughputExceededException"
	default:
		status, code = http.StatusBadRequest, "ThrottlingException"
	}
	msg := fmt.Sprintf("injected fault %s on %s", fault, op)
	h := http.Header{}
	var body string
	if jsonProto {
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("X-Amzn-Errortype", code)
		body = fmt.Sprintf(`{"__type":"com.amazonaws.faults#%s","message":%q%s}`, code, msg, extra)
	} else {
		h.Set("Content-Type", "application/xml")
		body = fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>faults</RequestId></Error>`, code, msg)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)),
		Request: req,
	}
}

// Clients builds clients for the emulator at endpoint whose requests go
// through t. They keep the SDK's standard retryer — its attempts and what it
// retries — with the backoff cut to a millisecond, so tests do not wait out
// real backoffs.
func Clients(endpoint string, t *Transport) *awsenv.Clients {
	cfg := aws.Config{
		Region:      awsenv.DefaultRegion,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  &http.Client{Transport: t},
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			})
		},
	}
	cfg.BaseEndpoint = aws.String(endpoint)
	return awsenv.New(cfg, endpoint)
}
