package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Door is a kind of front door.
type Door string

const (
	// FunctionURL is a Lambda Function URL with InvokeMode
	// RESPONSE_STREAM: the answer streams as the function writes it.
	FunctionURL Door = "function-url"
	// BufferedHTTPAPI is an API Gateway HTTP API: it buffers the whole answer and
	// gives up on the integration after its timeout.
	BufferedHTTPAPI Door = "http-api"
)

// Limits are a front door's and its function's limits. Scale them down
// together (Scaled) so that a test stays short.
type Limits struct {
	Door Door
	// Timeout is the function's Timeout, the deadline each invocation
	// gets; for BufferedHTTPAPI it is also when the door answers 503 (it gives up
	// on the integration after 30 s).
	Timeout time.Duration
	// MaxDuration is how long the door keeps one streamed response open
	// before it cuts the connection (a Function URL: the function's
	// Timeout, at most 15 min); 0 means Timeout.
	MaxDuration time.Duration
	// Idle cuts a streamed response when no byte came for this long; 0
	// never does.
	Idle time.Duration
	// MaxBuffered is the largest buffered answer (6 MB for Lambda); a
	// larger one is a 502.
	MaxBuffered int
	// Uncapped is how much of a streamed answer goes at full speed (the
	// first 6 MB); after it, Bandwidth bytes a second.
	Uncapped  int
	Bandwidth int
	// MaxRequest is the largest request body (6 MB); larger is a 413.
	MaxRequest int
	// Hold is BATON_HOLD: how long the function holds a chat or turn
	// stream open before it ends it at a resumable position. It must end
	// before Timeout.
	Hold time.Duration
}

// AWSLimits are the deployed template's: a Function URL with
// RESPONSE_STREAM in front of the operator function (Timeout 900 s, hold
// 14 min), 6 MB uncapped then 2 MB/s, 6 MB requests.
func AWSLimits() Limits {
	return Limits{
		Door: FunctionURL, Timeout: 900 * time.Second, MaxDuration: 900 * time.Second,
		MaxBuffered: 6 << 20, Uncapped: 6 << 20, Bandwidth: 2 << 20, MaxRequest: 6 << 20,
		Hold: 14 * time.Minute,
	}
}

// HTTPAPILimits are an HTTP API's in front of a buffered function: 30 s,
// answers buffered whole, 6 MB.
func HTTPAPILimits() Limits {
	return Limits{Door: BufferedHTTPAPI, Timeout: 30 * time.Second, MaxBuffered: 6 << 20, MaxRequest: 6 << 20, Hold: 25 * time.Second}
}

// Scaled returns l with every duration multiplied by f (900 s × 0.01 =
// 9 s), keeping their proportions.
func (l Limits) Scaled(f float64) Limits {
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	l.Timeout, l.MaxDuration, l.Idle, l.Hold = s(l.Timeout), s(l.MaxDuration), s(l.Idle), s(l.Hold)
	return l
}

// FrontStats counts what a front saw.
type FrontStats struct {
	Requests atomic.Int64
	// Cut counts streamed responses the door cut (max duration, idle).
	Cut atomic.Int64
	// TimedOut counts buffered answers given up on (503).
	TimedOut atomic.Int64
}

// Front is the model of a front door: an http.Handler that turns each
// request into the door's Lambda event, invokes the function through a
// Runtime and answers as the door would.
type Front struct {
	Limits  Limits
	Runtime *Runtime
	Stats   FrontStats
	// DomainName is the event's requestContext.domainName.
	DomainName string
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Stats.Requests.Add(1)
	max := f.Limits.MaxRequest
	if max <= 0 {
		max = 6 << 20
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(max)+1))
	if err != nil || len(body) > max {
		doorError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	ev, err := json.Marshal(f.event(r, body))
	if err != nil {
		doorError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	limit := f.Limits.MaxDuration
	if limit <= 0 || f.Limits.Door == BufferedHTTPAPI {
		limit = f.Limits.Timeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), limit)
	defer cancel()
	res, err := f.Runtime.Invoke(ctx, ev)
	if err != nil {
		f.Stats.TimedOut.Add(1)
		doorError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	}
	defer res.Body.Close()
	if f.Limits.Door == BufferedHTTPAPI {
		f.buffered(ctx, w, res)
		return
	}
	f.streamed(ctx, w, res)
}

// event is the payload 2.0 event both doors send (a Function URL's has
// the same shape).
func (f *Front) event(r *http.Request, body []byte) events.APIGatewayV2HTTPRequest {
	e := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Headers: map[string]string{}, Body: base64.StdEncoding.EncodeToString(body), IsBase64Encoded: true,
	}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			for _, v := range vs {
				e.Cookies = append(e.Cookies, strings.Split(v, "; ")...)
			}
			continue
		}
		e.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	e.RequestContext.DomainName = f.DomainName
	e.RequestContext.Stage = "$default"
	e.RequestContext.RequestID = fmt.Sprintf("front-%d", f.Stats.Requests.Load())
	e.RequestContext.HTTP = events.APIGatewayV2HTTPRequestContextHTTPDescription{
		Method: r.Method, Path: r.URL.Path, Protocol: "HTTP/1.1", SourceIP: "127.0.0.1", UserAgent: r.UserAgent(),
	}
	return e
}

// buffered answers like an HTTP API: the whole answer or nothing, within
// the timeout.
func (f *Front) buffered(ctx context.Context, w http.ResponseWriter, res *Result) {
	type read struct {
		b   []byte
		err error
	}
	got := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(res.Body, int64(f.Limits.MaxBuffered)+1))
		got <- read{b, err}
	}()
	var rd read
	select {
	case rd = <-got:
	case <-ctx.Done():
		f.Stats.TimedOut.Add(1)
		doorError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	}
	if rd.err != nil || len(rd.b) > f.Limits.MaxBuffered || res.FunctionError() != "" {
		doorError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	if res.ContentType == streamingContentType {
		// A streamed answer through a buffered door: what the prelude says,
		// then the body, all at once.
		br := bufio.NewReader(bytes.NewReader(rd.b))
		head, err := readPrelude(br)
		if err != nil {
			doorError(w, http.StatusBadGateway, "Bad Gateway")
			return
		}
		rest, _ := io.ReadAll(br)
		writeHead(w, head)
		_, _ = w.Write(rest)
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(rd.b, &resp); err != nil || resp.StatusCode == 0 {
		doorError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	writeAnswer(w, prelude{StatusCode: resp.StatusCode, Headers: resp.Headers, Cookies: resp.Cookies}, resp.Body, resp.IsBase64Encoded)
}

// writeAnswer writes a function's answer: its head, then its body,
// base64-decoded when the answer says it is encoded.
func writeAnswer(w http.ResponseWriter, head prelude, body string, encoded bool) {
	b := []byte(body)
	if encoded {
		b, _ = base64.StdEncoding.DecodeString(body)
	}
	writeHead(w, head)
	_, _ = w.Write(b)
}

// streamingContentType is the runtime's content type for a streamed HTTP
// answer.
const streamingContentType = "application/vnd.awslambda.http-integration-response"

type prelude struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	Cookies    []string          `json:"cookies"`
}

func readPrelude(br *bufio.Reader) (prelude, error) {
	var buf bytes.Buffer
	nuls := make([]byte, 8)
	for !bytes.HasSuffix(buf.Bytes(), nuls) {
		b, err := br.ReadByte()
		if err != nil {
			return prelude{}, fmt.Errorf("harness: prelude: %w", err)
		}
		buf.WriteByte(b)
	}
	var p prelude
	if err := json.Unmarshal(bytes.TrimRight(buf.Bytes(), "\x00"), &p); err != nil {
		return prelude{}, fmt.Errorf("harness: prelude: %w", err)
	}
	return p, nil
}

func writeHead(w http.ResponseWriter, p prelude) {
	for k, v := range p.Headers {
		w.Header().Set(k, v)
	}
	for _, c := range p.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	if p.StatusCode == 0 {
		p.StatusCode = http.StatusOK
	}
	w.WriteHeader(p.StatusCode)
}

func doorError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
