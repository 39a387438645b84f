package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/baton-run/baton/internal/callback"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-run/baton/internal/tool"
)

// DefaultTimeout bounds a remote tool call when no timeout is given.
const DefaultTimeout = 30 * time.Second

// MaxResponseBytes is the largest response a remote tool may return; a
// larger one is an error. Output is capped again, much lower, by tool.Truncate.
const MaxResponseBytes = 8 << 20

// excerptBytes is how much of a failed response an error quotes.
const excerptBytes = 200

// LambdaInvoker invokes a Lambda function synchronously (RequestResponse)
// with a payload. Package providers/awslambda has baton's, on the AWS
// SDK's Lambda client, which only a program that runs tools registers
// (host.Config.Lambda), so the operator and the tick link no Lambda
// client.
type LambdaInvoker interface {
	InvokeLambda(ctx context.Context, function string, payload []byte) (LambdaResult, error)
}

// LambdaResult is what a synchronous invocation returned.
type LambdaResult struct {
	Payload []byte
	// FunctionError is the X-Amz-Function-Error of a function that ran and
	// failed (such as "Unhandled"); empty when it succeeded.
	FunctionError string
}

// ErrNoLambdaInvoker is why a lambda tool cannot run in a program that
// registered no LambdaInvoker: its calls fail the turn (Fatal), since no
// retry and no model can mend it.
var ErrNoLambdaInvoker = errors.New("this program registered no Lambda invoker (host.Config.Lambda, such as providers.Lambda())")

// Envelope is what a remote tool receives: the model's input and the ids
// that let it recognise a repeated call.
type Envelope struct {
	Input          json.RawMessage `json:"input"`
	ToolCallID     string          `json:"toolCallId"`
	IdempotencyKey string          `json:"idempotencyKey"`
	// Callback is set for a tool that completes by callback: the tool
	// answers at once (a 2xx, whose body is ignored) and sends the call's
	// result later to Callback.URL, with the token as its credential.
	Callback *Callback `json:"callback,omitempty"`
}

// Callback is what a remote tool that completes by callback is sent: the
// token, the URL that takes POST {"output": …} or {"error": "…"}, the
// heartbeat URL, and when the call times out unless a heartbeat moves it.
type Callback struct {
	Token        string    `json:"token"`
	URL          string    `json:"url,omitempty"`
	HeartbeatURL string    `json:"heartbeatUrl,omitempty"`
	Deadline     time.Time `json:"deadline"`
}

// envelope is call c's request body, and whether it handed out a callback
// (the tool completes by one: the runner gave ctx its opener).
func envelope(ctx context.Context, c tool.Call) ([]byte, bool, error) {
	in := c.Input
	if len(bytes.TrimSpace(in)) == 0 {
		in = json.RawMessage(`{}`)
	}
	env := Envelope{Input: in, ToolCallID: c.ID, IdempotencyKey: c.IdempotencyKey}
	h, err := callback.Open(ctx)
	switch {
	case err == nil:
		env.Callback = &Callback{Token: h.Token, URL: h.URL, HeartbeatURL: h.HeartbeatURL, Deadline: h.Deadline}
	case !errors.Is(err, callback.ErrNoCallback):
		return nil, false, err
	}
	b, err := json.Marshal(env)
	if err != nil {
		return nil, false, fmt.Errorf("encode request: %w", err)
	}
	return b, env.Callback != nil, nil
}

// FunctionError is a Lambda invocation that ran and failed: the response
// carried X-Amz-Function-Error.
type FunctionError struct {
	Tool    string
	Kind    string // X-Amz-Function-Error, e.g. Unhandled
	Type    string // errorType of the payload, if any
	Message string // errorMessage of the payload, or an excerpt
}

func (e *FunctionError) Error() string {
	msg := e.Message
	if e.Type != "" {
		msg = e.Type + ": " + msg
	}
	return fmt.Sprintf("tool %s: function failed (%s): %s", e.Tool, e.Kind, msg)
}

// StatusError is an HTTP tool answer outside 2xx.
type StatusError struct {
	Tool   string
	Status int
	// Body is a short excerpt of the response body.
	Body string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("tool %s: HTTP %d %s", e.Tool, e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// LambdaTool is a tool run by a Lambda function, invoked synchronously
// with an Envelope as the payload. The function's response payload, which
// must be JSON, is the output. A function error or a non-JSON payload is
// an error, which the model sees as the tool's error result. timeout <= 0
// means DefaultTimeout. With a nil client the tool is still made (an agent
// that names it loads), and each call fails the turn with
// ErrNoLambdaInvoker.
func LambdaTool(name, description string, schema json.RawMessage, effect tool.Effect, idempotent bool, arn string, timeout time.Duration, client LambdaInvoker) tool.Tool {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return tool.Tool{
		Name: name, Description: description, Schema: schema, Effect: effect, Idempotent: idempotent,
		Run: func(parent context.Context, c tool.Call) (json.RawMessage, error) {
			if client == nil {
				return nil, &tool.Error{Kind: tool.Fatal, Err: fmt.Errorf("tool %s: %w", name, ErrNoLambdaInvoker)}
			}
			payload, pending, err := envelope(parent, c)
			if err != nil {
				return nil, fmt.Errorf("tool %s: %w", name, err)
			}
			ctx, cancel := context.WithTimeout(parent, timeout)
			defer cancel()
			out, err := client.InvokeLambda(ctx, arn, payload)
			if err != nil {
				if timedOut(parent, ctx) {
					return nil, fmt.Errorf("tool %s: no answer within %s: %w", name, timeout, err)
				}
				return nil, fmt.Errorf("tool %s: invoke %s: %w", name, arn, err)
			}
			if out.FunctionError != "" {
				fe := &FunctionError{Tool: name, Kind: out.FunctionError}
				var doc struct {
					Type    string `json:"errorType"`
					Message string `json:"errorMessage"`
				}
				if json.Unmarshal(out.Payload, &doc) == nil && (doc.Type != "" || doc.Message != "") {
					fe.Type, fe.Message = doc.Type, doc.Message
				} else {
					fe.Message = excerpt(out.Payload)
				}
				return nil, fe
			}
			if !json.Valid(out.Payload) {
				return nil, fmt.Errorf("tool %s: function returned a non-JSON payload: %q", name, excerpt(out.Payload))
			}
			if pending {
				return nil, callback.ErrPending // its result comes by the callback
			}
			return json.RawMessage(out.Payload), nil
		},
	}
}

// HTTPTool is a tool run by an HTTP endpoint: each call POSTs an Envelope
// as application/json with an Idempotency-Key header. A 2xx body is the
// output; one that is not JSON is wrapped as a JSON string. Any other
// status is a *StatusError, Transient for 429, 502, 503 and 504, as is an
// endpoint that cannot be reached (see Retry). timeout <= 0 means DefaultTimeout; a nil
// client means a new http.Client.
func HTTPTool(name, description string, schema json.RawMessage, effect tool.Effect, idempotent bool, url string, timeout time.Duration, client *http.Client) tool.Tool {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if client == nil {
		client = &http.Client{}
	}
	return tool.Tool{
		Name: name, Description: description, Schema: schema, Effect: effect, Idempotent: idempotent,
		Run: func(parent context.Context, c tool.Call) (json.RawMessage, error) {
			payload, pending, err := envelope(parent, c)
			if err != nil {
				return nil, fmt.Errorf("tool %s: %w", name, err)
			}
			ctx, cancel := context.WithTimeout(parent, timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
			if err != nil {
				return nil, fmt.Errorf("tool %s: %w", name, err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			if c.IdempotencyKey != "" {
				req.Header.Set("Idempotency-Key", c.IdempotencyKey)
			}
			resp, err := client.Do(req)
			if err != nil {
				if timedOut(parent, ctx) {
					return nil, fmt.Errorf("tool %s: no answer within %s: %w", name, timeout, err)
				}
				// No answer came: the endpoint was not reached.
				return nil, &tool.Error{Kind: tool.Transient, Err: fmt.Errorf("tool %s: %w", name, err)}
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
			if err != nil {
				if timedOut(parent, ctx) {
					return nil, fmt.Errorf("tool %s: no complete answer within %s: %w", name, timeout, err)
				}
				return nil, fmt.Errorf("tool %s: read response: %w", name, err)
			}
			if resp.StatusCode < 200 || resp.StatusCode > 299 {
				return nil, statusError(name, resp.StatusCode, body)
			}
			if pending {
				return nil, callback.ErrPending // its result comes by the callback
			}
			if len(body) > MaxResponseBytes {
				return nil, fmt.Errorf("tool %s: response larger than %d bytes", name, MaxResponseBytes)
			}
			if json.Valid(body) {
				return json.RawMessage(body), nil
			}
			wrapped, err := json.Marshal(string(body))
			if err != nil {
				return nil, fmt.Errorf("tool %s: wrap response: %w", name, err)
			}
			return wrapped, nil
		},
	}
}

// statusError is an HTTP tool's answer outside 2xx: Transient for 429,
// 502, 503 and 504, which say the request was not served (a Retry policy
// tries it again, with the same Idempotency-Key), for the model otherwise.
func statusError(name string, status int, body []byte) error {
	err := &StatusError{Tool: name, Status: status, Body: excerpt(body)}
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &tool.Error{Kind: tool.Transient, Err: err}
	}
	return err
}

// excerpt is the start of b for an error message: whitespace collapsed,
// at most excerptBytes bytes, cut on a UTF-8 boundary.
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) <= excerptBytes {
		return s
	}
	cut := excerptBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// timedOut reports whether ctx ended because of the tool's own timeout
// rather than its parent's end.
func timedOut(parent, ctx context.Context) bool {
	return parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
}
