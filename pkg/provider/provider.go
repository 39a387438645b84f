package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/model"
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

// Classify turns a provider failure into a classified *model.Error:
// 429 or a rate-limit code is Throttled; 503, 529 or an overloaded code is
// Overloaded; 401 and 403 are Auth; a 400 (or 413, or an in-stream error)
// saying the prompt is too long is ContextTooLong; any other 400 is
// InvalidRequest; everything else is Other.
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
	case f.Status == http.StatusBadRequest ||
		(f.Status == 0 && containsAny(code, "invalid_request", "validation", "badrequest")):
		return model.InvalidRequest
	}
	return model.Other
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
// why the model stopped.
func Truncated(provider string) *model.Error {
	return &model.Error{Kind: model.Other, Err: fmt.Errorf("%s: stream ended before the model finished", provider)}
}

// Canceled classifies an error seen after ctx ended: the step was abandoned
// by the caller, not failed by the provider.
func Canceled(provider string, cause error) *model.Error {
	return &model.Error{Kind: model.Other, Err: fmt.Errorf("%s: %w", provider, cause)}
}
