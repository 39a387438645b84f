package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/pkg/conversation"
)

// Failure is a failed model call as a provider reported it. Every field is
// optional; Classify uses what is there.
type Failure struct {
	// Status is the HTTP status, or 0 for an error reported inside a stream.
	Status int
	// Code is the provider's error type or code, such as "overloaded_error",
	// "rate_limit_exceeded" or "ThrottlingException".
	Code string
	// Message is the provider's human-readable message.
	Message string
	// Header holds the response headers, for the retry-after hint.
	Header http.Header
	// Err is the underlying error; Classify builds one when it is nil.
	Err error
}

// Classify turns a provider failure into a classified *model.Error. It is
// the one place a provider's failure gets its kind:
//
//   - 429 or a rate-limit code: Throttled.
//   - 503, 529 or an overloaded code: Overloaded.
//   - 401, 403 or an auth code: Auth.
//   - a 400, 413 or 422 (or an in-stream error) saying the prompt is too
//     long, or any 413: ContextTooLong.
//   - any other 400, 404, 405 or 422, or a validation code: InvalidRequest.
//   - 408, any other 5xx but 501 and 505, or an internal-error code inside
//     the stream: Unavailable.
//   - no status and a broken connection or stream (see Broken): Interrupted.
//   - everything else: Other.
func Classify(f Failure) *model.Error {
	err := f.Err
	if err == nil {
		switch {
		case f.Code != "" && f.Message != "":
			err = fmt.Errorf("%s: %s", f.Code, f.Message)
		case f.Message != "":
			err = errors.New(f.Message)
		case f.Code != "":
			err = errors.New(f.Code)
		default:
			err = errors.New("unknown provider error")
		}
	}
	return &model.Error{
		Kind:       kindOf(f),
		Status:     f.Status,
		RetryAfter: RetryAfter(f.Header, time.Now()),
		Err:        err,
	}
}

func kindOf(f Failure) model.ErrorKind {
	code := strings.ToLower(f.Code)
	switch {
	case f.Status == http.StatusTooManyRequests ||
		containsAny(code, "rate_limit", "ratelimit", "throttl", "too_many_requests", "servicequotaexceeded"):
		return model.Throttled
	case f.Status == 529 || f.Status == http.StatusServiceUnavailable ||
		containsAny(code, "overloaded", "serviceunavailable", "service_unavailable", "modelnotready"):
		return model.Overloaded
	case f.Status == http.StatusUnauthorized || f.Status == http.StatusForbidden ||
		containsAny(code, "authentication", "permission", "accessdenied", "unrecognizedclient", "expiredtoken", "invalid_api_key", "unauthorized"):
		return model.Auth
	}
	clientSide := f.Status == 0 || f.Status == http.StatusBadRequest ||
		f.Status == http.StatusRequestEntityTooLarge || f.Status == http.StatusUnprocessableEntity
	switch {
	case clientSide && (ContextTooLong(code) || ContextTooLong(f.Message)):
		return model.ContextTooLong
	case f.Status == http.StatusRequestEntityTooLarge:
		return model.ContextTooLong
	case f.Status == http.StatusBadRequest || f.Status == http.StatusNotFound ||
		f.Status == http.StatusMethodNotAllowed || f.Status == http.StatusUnprocessableEntity ||
		(f.Status == 0 && containsAny(code, "invalid_request", "validation", "badrequest")):
		return model.InvalidRequest
	case f.Status == http.StatusRequestTimeout ||
		(f.Status >= 500 && f.Status <= 599 && f.Status != http.StatusNotImplemented && f.Status != http.StatusHTTPVersionNotSupported):
		return model.Unavailable
	case f.Status == 0 && containsAny(code, "api_error", "server_error", "internalserver", "internal_server", "modelstreamerror", "modeltimeout"):
		return model.Unavailable
	case f.Status == 0 && Broken(f.Err):
		return model.Interrupted
	}
	return model.Other
}

// Broken reports whether err is a broken connection or stream rather than
// an answer: a connection refused, reset or dropped, a timeout of the
// transport, a body cut short, or an event that did not decode (bad JSON,
// an event-stream checksum mismatch). The caller checks its context first:
// a step cancelled or out of time is not the provider's fault.
func Broken(err error) bool {
	if err == nil {
		return false
	}
	var (
		opErr  *net.OpError
		netErr net.Error
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		crc    eventstream.ChecksumError
		crcp   *eventstream.ChecksumError
	)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ETIMEDOUT),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return true
	case errors.As(err, &opErr), errors.As(err, &netErr) && netErr.Timeout():
		return true
	case errors.As(err, &syntax), errors.As(err, &typ), errors.As(err, &crc), errors.As(err, &crcp):
		return true
	}
	// Some libraries flatten the cause into text.
	return containsAny(strings.ToLower(err.Error()),
		"unexpected eof",
		"connection reset",
		"connection refused",
		"broken pipe",
		"server sent goaway",
		"http2: stream",
		"checksum mismatch",
		"invalid character",
		"unexpected end of json input",
	)
}

// ContextTooLong reports whether a provider's error message or code says the
// prompt does not fit the model's context window.
func ContextTooLong(s string) bool {
	return containsAny(strings.ToLower(s),
		"prompt is too long",
		"input is too long",
		"too long",
		"context_length_exceeded",
		"context length",
		"maximum context",
		"context window",
		"too many tokens",
		"model_context_window_exceeded",
	)
}

func containsAny(s string, subs ...string) bool {
	if s == "" {
		return false
	}
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// RetryAfter reads a provider's retry hint from response headers:
// retry-after-ms (milliseconds), then retry-after (seconds or an HTTP date,
// taken relative to now). It returns 0 when there is no usable hint.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// ResultText renders a tool result's output as the text a model reads: a
// JSON string is unquoted, any other JSON value is passed through as is.
func ResultText(out json.RawMessage) string {
	out = bytes.TrimSpace(out)
	if len(out) == 0 || string(out) == "null" {
		return ""
	}
	if out[0] == '"' {
		var s string
		if err := json.Unmarshal(out, &s); err == nil {
			return s
		}
	}
	return string(out)
}

// CallInput normalises a streamed tool input: empty input (or null) is the
// empty object, anything else must be one whole JSON object, as every
// provider's API and every tool takes. It reports false when the input is
// not (a call cut off mid-stream, or a number, string or array).
func CallInput(raw string) (json.RawMessage, bool) {
	s := strings.TrimSpace(raw)
	if s == "" || s == "null" {
		return json.RawMessage(`{}`), true
	}
	if s[0] != '{' || !json.Valid([]byte(s)) {
		return nil, false
	}
	return json.RawMessage(s), true
}

// ClampUsage returns u with negative token counts, which no provider
// means, as zero, so garbage in a stream never subtracts from a turn's
// usage.
func ClampUsage(u model.Usage) model.Usage {
	return model.Usage{InputTokens: max(u.InputTokens, 0), OutputTokens: max(u.OutputTokens, 0)}
}

// InputOrEmpty returns a recorded tool call's input, or the empty object
// when there is none; providers reject a tool call without an input object.
func InputOrEmpty(in json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(in)) == 0 || string(bytes.TrimSpace(in)) == "null" {
		return json.RawMessage(`{}`)
	}
	return in
}

// SchemaObject decodes a tool's JSON Schema into a map, defaulting an empty
// schema to an object schema with no properties.
func SchemaObject(schema json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, fmt.Errorf("tool schema: %w", err)
	}
	if m == nil {
		m = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return m, nil
}

// CheckToolPairing checks that the conversation can be sent to a model: the
// tool messages right after an assistant message answer each of its tool
// calls exactly once, and no tool result answers a call that was not made
// just before it. A violation is an InvalidRequest *model.Error; providers
// reject such conversations, and making up results here would hide a bug.
func CheckToolPairing(msgs []conversation.Message) error {
	pending := map[string]bool{} // call id -> answered
	var order []string
	flush := func(at int) error {
		for _, id := range order {
			if !pending[id] {
				return invalid("message %d: tool call %q has no result", at, id)
			}
		}
		clear(pending)
		order = order[:0]
		return nil
	}
	for i, m := range msgs {
		if m.Role != conversation.ToolRole {
			if err := flush(i); err != nil {
				return err
			}
		}
		for _, c := range m.Content {
			switch c.Type {
			case conversation.ToolCall:
				if m.Role != conversation.Assistant {
					return invalid("message %d: tool call %q outside an assistant message", i, c.ToolCallID)
				}
				if c.ToolCallID == "" {
					return invalid("message %d: tool call %q has no id", i, c.ToolName)
				}
				if _, dup := pending[c.ToolCallID]; dup {
					return invalid("message %d: duplicate tool call id %q", i, c.ToolCallID)
				}
				pending[c.ToolCallID] = false
				order = append(order, c.ToolCallID)
			case conversation.ToolResult:
				answered, ok := pending[c.ToolCallID]
				if !ok {
					return invalid("message %d: tool result %q answers no preceding tool call", i, c.ToolCallID)
				}
				if answered {
					return invalid("message %d: tool call %q answered twice", i, c.ToolCallID)
				}
				pending[c.ToolCallID] = true
			}
		}
	}
	return flush(len(msgs))
}

func invalid(format string, args ...any) error {
	return &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("conversation: "+format, args...)}
}

// Truncated is the error for a stream that ended before the provider said
// why the model stopped: the step was cut short, and may be redone.
func Truncated(provider string) *model.Error {
	return &model.Error{Kind: model.Interrupted, Err: fmt.Errorf("%s: stream ended before the model finished", provider)}
}

// BadToolInput is the error for a step whose tool call input is not JSON:
// the model's output is unusable, and another try may do better.
func BadToolInput(provider, call string) *model.Error {
	return &model.Error{Kind: model.BadOutput, Err: fmt.Errorf("%s: tool call %s: input is not valid JSON", provider, call)}
}

// ClassifyCall is the *model.Error of a provider call that failed with err:
// Canceled when ctx has ended, as the caller abandoned the step, else the
// Classify of what failure reads from err.
func ClassifyCall(ctx context.Context, provider string, err error, failure func(error) Failure) *model.Error {
	if ctx.Err() != nil {
		return Canceled(provider, ctx.Err())
	}
	return Classify(failure(err))
}

// Canceled classifies an error seen after ctx ended: the step was abandoned
// by the caller, not failed by the provider.
func Canceled(provider string, cause error) *model.Error {
	return &model.Error{Kind: model.Other, Err: fmt.Errorf("%s: %w", provider, cause)}
}
