package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/pkg/conversation"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		f    Failure
		kind model.ErrorKind
	}{
		{Failure{Status: 429}, model.Throttled},
		{Failure{Status: 529}, model.Overloaded},
		{Failure{Status: 503}, model.Overloaded},
		{Failure{Code: "overloaded_error"}, model.Overloaded},
		{Failure{Status: 500, Code: "overloaded_error"}, model.Overloaded},
		{Failure{Code: "ThrottlingException"}, model.Throttled},
		{Failure{Code: "ServiceUnavailableException"}, model.Overloaded},
		{Failure{Code: "rate_limit_exceeded"}, model.Throttled},
		{Failure{Status: 400, Message: "prompt is too long: 212345 tokens > 200000 maximum"}, model.ContextTooLong},
		{Failure{Status: 400, Code: "context_length_exceeded"}, model.ContextTooLong},
		{Failure{Status: 400, Code: "ValidationException", Message: "Input is too long for requested model."}, model.ContextTooLong},
		{Failure{Status: 413, Code: "request_too_large"}, model.ContextTooLong},
		{Failure{Status: 400, Message: "messages: roles must alternate"}, model.InvalidRequest},
		{Failure{Code: "ValidationException", Message: "bad"}, model.InvalidRequest},
		{Failure{Status: 401}, model.Auth},
		{Failure{Status: 403, Message: "too long"}, model.Auth},
		{Failure{Code: "AccessDeniedException"}, model.Auth},
		{Failure{Status: 500}, model.Unavailable},
		{Failure{Status: 502}, model.Unavailable},
		{Failure{Status: 504}, model.Unavailable},
		{Failure{Status: 408}, model.Unavailable},
		{Failure{Status: 501}, model.Other},
		{Failure{Code: "api_error", Message: "Internal server error"}, model.Unavailable},
		{Failure{Code: "server_error"}, model.Unavailable},
		{Failure{Code: "InternalServerException"}, model.Unavailable},
		{Failure{Code: "ModelStreamErrorException"}, model.Unavailable},
		{Failure{Status: 404}, model.InvalidRequest},
		{Failure{Status: 422, Message: "unprocessable"}, model.InvalidRequest},
		{Failure{Err: errors.New("unexpected EOF")}, model.Interrupted},
		{Failure{Err: io.ErrUnexpectedEOF}, model.Interrupted},
		// A 500 that mentions length is not a context error.
		{Failure{Status: 500, Message: "response too long"}, model.Unavailable},
		// A broken transport under a status is the status's.
		{Failure{Status: 401, Err: io.ErrUnexpectedEOF}, model.Auth},
		{Failure{Err: errors.New("something else")}, model.Other},
	}
	for _, c := range cases {
		got := Classify(c.f)
		if got.Kind != c.kind || got.Status != c.f.Status || got.Err == nil {
			t.Errorf("Classify(%+v) = %+v, want %s", c.f, got, c.kind)
		}
	}
	cause := errors.New("boom")
	if e := Classify(Failure{Status: 429, Err: cause}); !errors.Is(e, cause) {
		t.Fatal("Classify lost the cause")
	}
	h := http.Header{"Retry-After": {"7"}}
	if e := Classify(Failure{Status: 429, Header: h}); e.RetryAfter != 7*time.Second {
		t.Fatalf("RetryAfter = %v", e.RetryAfter)
	}
}

func TestBroken(t *testing.T) {
	badJSON := json.Unmarshal([]byte(`{"type": nope}`), new(any))
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"unexpected EOF", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), true},
		{"EOF before the response", &url.Error{Op: "Post", URL: "http://x", Err: io.EOF}, true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"refused", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, true},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), true},
		{"timeout", &url.Error{Op: "Post", URL: "http://x", Err: timeoutError{}}, true},
		{"bad JSON event", fmt.Errorf("decode: %w", badJSON), true},
		{"checksum", fmt.Errorf("event stream: %w", eventstream.ChecksumError{}), true},
		{"flattened text", errors.New("stream error: connection reset by peer"), true},
		{"nil", nil, false},
		{"an answer", errors.New("invalid x-api-key"), false},
		{"no timeout", &url.Error{Op: "Post", URL: "http://x", Err: notTimeout{}}, false},
	}
	for _, c := range cases {
		if got := Broken(c.err); got != c.want {
			t.Errorf("%s: Broken(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

type notTimeout struct{}

func (notTimeout) Error() string { return "unsupported protocol scheme" }

func TestTruncatedAndBadToolInputAreRetryable(t *testing.T) {
	if e := Truncated("x"); e.Kind != model.Interrupted || !e.Transient() {
		t.Fatalf("Truncated = %+v", e)
	}
	if e := BadToolInput("x", "call_1"); e.Kind != model.BadOutput || !e.Retryable() || e.Transient() {
		t.Fatalf("BadToolInput = %+v", e)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		h    http.Header
		want time.Duration
	}{
		{nil, 0},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(42 * time.Second).Format(http.TimeFormat)}}, 42 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-4"}}, 0},
	}
	for _, c := range cases {
		if got := RetryAfter(c.h, now); got != c.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", c.h, got, c.want)
		}
	}
}

func TestResultTextAndCallInput(t *testing.T) {
	if got := ResultText(json.RawMessage(`"plain \"text\""`)); got != `plain "text"` {
		t.Fatalf("string = %q", got)
	}
	if got := ResultText(json.RawMessage(` {"a":1} `)); got != `{"a":1}` {
		t.Fatalf("object = %q", got)
	}
	if got := ResultText(nil); got != "" {
		t.Fatalf("nil = %q", got)
	}
	if in, ok := CallInput("  "); !ok || string(in) != "{}" {
		t.Fatalf("empty = %s %v", in, ok)
	}
	if _, ok := CallInput(`{"city":"Pa`); ok {
		t.Fatal("cut-off input accepted")
	}
	if in := InputOrEmpty(json.RawMessage("null")); string(in) != "{}" {
		t.Fatalf("null input = %s", in)
	}
}

func call(id string) conversation.Content {
	return conversation.Content{Type: conversation.ToolCall, ToolCallID: id, ToolName: "t", Input: json.RawMessage(`{}`)}
}

func result(id string) conversation.Content {
	return conversation.Content{Type: conversation.ToolResult, ToolCallID: id, Output: json.RawMessage(`"ok"`)}
}

func msg(role conversation.Role, cs ...conversation.Content) conversation.Message {
	return conversation.Message{Role: role, Content: cs}
}

func TestCheckToolPairing(t *testing.T) {
	user := msg(conversation.User, conversation.Content{Type: conversation.Text, Text: "hi"})
	ok := [][]conversation.Message{
		{user},
		{user, msg(conversation.Assistant, call("a"), call("b")), msg(conversation.ToolRole, result("b")), msg(conversation.ToolRole, result("a")), user},
		{user, msg(conversation.Assistant, call("a")), msg(conversation.ToolRole, result("a")), msg(conversation.Assistant, call("a")), msg(conversation.ToolRole, result("a"))},
	}
	for i, c := range ok {
		if err := CheckToolPairing(c); err != nil {
			t.Errorf("ok case %d: %v", i, err)
		}
	}
	bad := map[string][]conversation.Message{
		"has no result":        {user, msg(conversation.Assistant, call("a"), call("b")), msg(conversation.ToolRole, result("a"))},
		"has no result ":       {user, msg(conversation.Assistant, call("a")), user},
		"answers no preceding": {user, msg(conversation.ToolRole, result("a"))},
		"answered twice":       {user, msg(conversation.Assistant, call("a")), msg(conversation.ToolRole, result("a"), result("a"))},
		"duplicate tool call":  {user, msg(conversation.Assistant, call("a"), call("a"))},
		"outside an assistant": {msg(conversation.User, call("a"))},
	}
	for want, c := range bad {
		err := CheckToolPairing(c)
		if model.KindOf(err) != model.InvalidRequest || !strings.Contains(err.Error(), strings.TrimSpace(want)) {
			t.Errorf("%s: err = %v", want, err)
		}
	}
}

// TestClassifyCall: a call whose context has ended was abandoned by the
// caller, whatever the provider said; otherwise the provider's failure is
// classified.
func TestClassifyCall(t *testing.T) {
	throttled := func(err error) Failure { return Failure{Status: 429, Err: err} }
	cause := errors.New("too many requests")
	if err := ClassifyCall(context.Background(), "test", cause, throttled); err.Kind != model.Throttled || !errors.Is(err, cause) {
		t.Fatalf("live: %v, want the failure throttled", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ClassifyCall(ctx, "test", cause, throttled); err.Kind != model.Other || !errors.Is(err, context.Canceled) || errors.Is(err, cause) {
		t.Fatalf("cancelled: %v, want Canceled", err)
	}
}
