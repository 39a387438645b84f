package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/model"
	pt "github.com/baton-run/baton/internal/provider/providertest"
)

var sseHeader = http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}, "Request-Id": {"req_011CTest"}}

const messageStart = `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":2,"service_tier":"standard"}}}`

func sse(pairs ...string) pt.Reply {
	return pt.Reply{Header: sseHeader, Chunks: [][]byte{pt.SSE(pairs...)}}
}

// Realistic step bodies, as the Messages API streams them.
var (
	textStep = []string{
		"message_start", messageStart,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		"ping", `{"type": "ping"}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there!"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`,
		"message_stop", `{"type":"message_stop"}`,
	}
	toolStep = []string{
		"message_start", messageStart,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}`,
		"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
		"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}`,
		"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ris\", \"unit\": \"c\"}"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":1}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`,
		"message_stop", `{"type":"message_stop"}`,
	}
	twoToolStep = []string{
		"message_start", messageStart,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_A","name":"get_weather","input":{}}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Paris\"}"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_B","name":"get_time","input":{}}}`,
		"content_block_stop", `{"type":"content_block_stop","index":1}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}`,
		"message_stop", `{"type":"message_stop"}`,
	}
	thinkingStep = []string{
		"message_start", messageStart,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants a greeting."}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" Keep it short."}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi!"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":1}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":30}}`,
		"message_stop", `{"type":"message_stop"}`,
	}
	midStreamError = []string{
		"message_start", messageStart,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
		"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CTest"}`,
	}
)

func errorReply(status int, typ, msg string, header http.Header) pt.Reply {
	h := http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_011CErr"}}
	for k, v := range header {
		h[k] = v
	}
	body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}, "request_id": "req_011CErr"})
	return pt.Reply{Status: status, Header: h, Chunks: [][]byte{body}}
}

func newModel(t testing.TB, srv *pt.Server, mut ...func(*Config)) *Model {
	t.Helper()
	cfg := Config{Model: "claude-sonnet-4-5", MaxTokens: 1024, APIKey: "sk-ant-test", BaseURL: srv.URL}
	for _, f := range mut {
		f(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func req() model.Request {
	return model.Request{System: "You are terse.", Messages: pt.UserText("Hi"), Tools: []model.ToolSpec{pt.WeatherTool()}}
}

func TestTextOnly(t *testing.T) {
	srv := pt.NewServer(t, sse(textStep...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	if got := pt.Text(evs, model.TextDelta); got != "Hello there!" {
		t.Fatalf("text = %q", got)
	}
	last := evs[len(evs)-1]
	want := model.Event{Type: model.Finish, Stop: model.StopEnd, Usage: model.Usage{InputTokens: 572, OutputTokens: 15}}
	if last.Type != want.Type || last.Stop != want.Stop || last.Usage != want.Usage {
		t.Fatalf("finish = %+v, want %+v", last, want)
	}
	rq := srv.Requests()[0]
	if rq.Path != "/v1/messages" || rq.Header.Get("X-Api-Key") != "sk-ant-test" {
		t.Fatalf("request %s key %q", rq.Path, rq.Header.Get("X-Api-Key"))
	}
	var body map[string]any
	if err := json.Unmarshal(rq.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["stream"] != true || body["model"] != "claude-sonnet-4-5" || body["max_tokens"] != 1024.0 {
		t.Fatalf("body = %s", rq.Body)
	}
	if sys := body["system"].([]any)[0].(map[string]any); sys["text"] != "You are terse." || sys["type"] != "text" {
		t.Fatalf("system = %v", body["system"])
	}
	tool := body["tools"].([]any)[0].(map[string]any)
	schema := tool["input_schema"].(map[string]any)
	if tool["name"] != "get_weather" || tool["description"] == "" || schema["type"] != "object" ||
		schema["additionalProperties"] != false || schema["required"].([]any)[0] != "city" ||
		schema["properties"].(map[string]any)["unit"].(map[string]any)["enum"] == nil {
		t.Fatalf("tool = %v", tool)
	}
}

func TestOneToolCall(t *testing.T) {
	srv := pt.NewServer(t, sse(toolStep...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	calls := pt.Calls(evs)
	if len(calls) != 1 || calls[0].ID != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || calls[0].Name != "get_weather" ||
		string(calls[0].Input) != `{"city": "Paris", "unit": "c"}` {
		t.Fatalf("calls = %+v", calls)
	}
	if pt.Text(evs, model.TextDelta) != "Let me check." {
		t.Fatalf("events = %+v", evs)
	}
	if last := evs[len(evs)-1]; last.Type != model.Finish || last.Stop != model.StopToolCalls || last.Usage.OutputTokens != 89 {
		t.Fatalf("finish = %+v", last)
	}
}

func TestTwoToolCalls(t *testing.T) {
	srv := pt.NewServer(t, sse(twoToolStep...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	calls := pt.Calls(evs)
	want := []model.Call{
		{ID: "toolu_A", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "toolu_B", Name: "get_time", Input: json.RawMessage(`{}`)}, // no input deltas at all
	}
	if len(calls) != 2 || calls[0].ID != want[0].ID || string(calls[0].Input) != string(want[0].Input) ||
		calls[1].ID != want[1].ID || calls[1].Name != want[1].Name || string(calls[1].Input) != "{}" {
		t.Fatalf("calls = %+v", calls)
	}
	if evs[len(evs)-1].Stop != model.StopToolCalls {
		t.Fatalf("stop = %v", evs[len(evs)-1].Stop)
	}
}

func TestReasoning(t *testing.T) {
	srv := pt.NewServer(t, sse(thinkingStep...))
	m := newModel(t, srv, func(c *Config) { c.ThinkingBudget = 512 })
	evs, err := pt.Collect(m.Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	types := []model.EventType{model.ReasoningDelta, model.ReasoningDelta, model.ReasoningSignature, model.TextDelta, model.Finish}
	var got []model.EventType
	for _, e := range evs {
		got = append(got, e.Type)
	}
	if !slices.Equal(got, types) {
		t.Fatalf("event types = %v, want %v", got, types)
	}
	if pt.Text(evs, model.ReasoningDelta) != "The user wants a greeting. Keep it short." ||
		pt.Text(evs, model.ReasoningSignature) != "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" {
		t.Fatalf("events = %+v", evs)
	}
	if evs[len(evs)-1].Stop != model.StopLength {
		t.Fatalf("stop = %v, want length", evs[len(evs)-1].Stop)
	}
	var body struct {
		Thinking struct {
			Type   string `json:"type"`
			Budget int    `json:"budget_tokens"`
		} `json:"thinking"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil || body.Thinking.Type != "enabled" || body.Thinking.Budget != 512 {
		t.Fatalf("thinking = %+v (%v)", body.Thinking, err)
	}
}

func TestErrorMidStream(t *testing.T) {
	srv := pt.NewServer(t, sse(midStreamError...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if pt.Text(evs, model.TextDelta) != "Hel" {
		t.Fatalf("events before the error = %+v", evs)
	}
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Overloaded || me.Status != 0 {
		t.Fatalf("err = %#v", err)
	}
}

func TestTruncatedStream(t *testing.T) {
	srv := pt.NewServer(t, pt.Reply{Header: sseHeader, Chunks: [][]byte{pt.SSE(textStep[:8]...)}, Abort: true})
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Interrupted {
		t.Fatalf("err = %v", err)
	}
	// A stream that ends cleanly before message_stop is cut off too.
	srv = pt.NewServer(t, sse(textStep[:12]...))
	_, err = pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if model.KindOf(err) != model.Interrupted || !strings.Contains(err.Error(), "before the model finished") {
		t.Fatalf("err = %v", err)
	}
}

func TestToolInputCutOffByMaxTokens(t *testing.T) {
	// A tool call cut off by max_tokens is dropped; the step ends with length.
	step := []string{
		"message_start", messageStart,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_X","name":"get_weather","input":{}}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":1024}}`,
		"message_stop", `{"type":"message_stop"}`,
	}
	srv := pt.NewServer(t, sse(step...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil || len(pt.Calls(evs)) != 0 || evs[len(evs)-1].Stop != model.StopLength {
		t.Fatalf("events = %+v err = %v", evs, err)
	}
	// The same cut-off input with any other stop reason is bad output.
	step[9] = `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":10}}`
	srv = pt.NewServer(t, sse(step...))
	if _, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req())); model.KindOf(err) != model.BadOutput {
		t.Fatalf("err = %v", err)
	}
}

func TestThrottledIsRetryableWithItsHint(t *testing.T) {
	srv := pt.NewServer(t,
		errorReply(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", http.Header{"Retry-After": {"3"}}),
		sse(textStep...),
	)
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Throttled || !me.Transient() || me.RetryAfter != 3*time.Second {
		t.Fatalf("err = %#v, want throttled with the 3s retry-after", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1 (the SDK must not retry on its own)", n)
	}
}

func TestOverloadIsRetryable(t *testing.T) {
	srv := pt.NewServer(t, errorReply(529, "overloaded_error", "Overloaded", nil))
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Overloaded || me.Status != 529 || !me.Retryable() {
		t.Fatalf("err = %#v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1 (the SDK must not retry on its own)", n)
	}
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		reply pt.Reply
		kind  model.ErrorKind
	}{
		{errorReply(429, "rate_limit_error", "rate limited", nil), model.Throttled},
		{errorReply(529, "overloaded_error", "Overloaded", nil), model.Overloaded},
		{errorReply(503, "api_error", "unavailable", nil), model.Overloaded},
		{errorReply(400, "invalid_request_error", "prompt is too long: 212345 tokens > 200000 maximum", nil), model.ContextTooLong},
		{errorReply(400, "invalid_request_error", "messages.1.content.0: unexpected tool_use_id", nil), model.InvalidRequest},
		{errorReply(401, "authentication_error", "invalid x-api-key", nil), model.Auth},
		{errorReply(403, "permission_error", "no access", nil), model.Auth},
		{errorReply(500, "api_error", "Internal server error", nil), model.Unavailable},
		{errorReply(502, "api_error", "Bad gateway", nil), model.Unavailable},
		{errorReply(504, "timeout_error", "Gateway timeout", nil), model.Unavailable},
		{errorReply(404, "not_found_error", "model: claude-nope", nil), model.InvalidRequest},
		{errorReply(413, "request_too_large", "Request exceeds the maximum allowed number of bytes.", nil), model.ContextTooLong},
	}
	for _, c := range cases {
		srv := pt.NewServer(t, c.reply)
		_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != c.kind || me.Status != c.reply.Status {
			t.Errorf("%d: err = %v, want kind %s", c.reply.Status, err, c.kind)
		}
	}
}

func TestRequestEncodesToolRoundTrip(t *testing.T) {
	srv := pt.NewServer(t, sse(textStep...))
	r := model.Request{Messages: pt.ToolConversation(), Tools: []model.ToolSpec{pt.WeatherTool()}}
	if _, err := pt.Collect(newModel(t, srv).Stream(context.Background(), r)); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 3 {
		t.Fatalf("messages = %s", srv.Requests()[0].Body)
	}
	roles := []string{body.Messages[0].Role, body.Messages[1].Role, body.Messages[2].Role}
	if !slices.Equal(roles, []string{"user", "assistant", "user"}) {
		t.Fatalf("roles = %v", roles)
	}
	asst := body.Messages[1].Content
	wantAsst := []string{
		`{"signature":"sig-abc","thinking":"I should look both up.","type":"thinking"}`,
		`{"text":"Checking both.","type":"text"}`,
		`{"id":"call_paris","input":{"city":"Paris"},"name":"get_weather","type":"tool_use"}`,
		`{"id":"call_london","input":{"city":"London"},"name":"get_weather","type":"tool_use"}`,
	}
	for i, w := range wantAsst {
		if i >= len(asst) || !sameJSON(t, asst[i], w) {
			t.Fatalf("assistant content = %s", body.Messages[1].Content)
		}
	}
	// Both tool messages merge into one user message, each result paired
	// with its call id; the denied one is an error result.
	results := body.Messages[2].Content
	wantResults := []string{
		`{"tool_use_id":"call_paris","content":[{"text":"{\"temp_c\":18,\"sky\":\"clear\"}","type":"text"}],"type":"tool_result"}`,
		`{"tool_use_id":"call_london","is_error":true,"content":[{"text":"denied: the operator rejected this call","type":"text"}],"type":"tool_result"}`,
	}
	if len(results) != 2 || !sameJSON(t, results[0], wantResults[0]) || !sameJSON(t, results[1], wantResults[1]) {
		t.Fatalf("tool results = %s", results)
	}
}

func TestDanglingToolCallRejectedBeforeSending(t *testing.T) {
	srv := pt.NewServer(t, sse(textStep...))
	conv := pt.ToolConversation()[:3] // the London call has no result
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), model.Request{Messages: conv}))
	if model.KindOf(err) != model.InvalidRequest || len(srv.Requests()) != 0 {
		t.Fatalf("err = %v, requests = %d", err, len(srv.Requests()))
	}
}

func TestContextCancelled(t *testing.T) {
	srv := pt.NewServer(t, sse(textStep...))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := pt.Collect(newModel(t, srv).Stream(ctx, req()))
	if !errors.Is(err, context.Canceled) || model.KindOf(err) != model.Other {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	r := sse(textStep[:8]...)
	r.Hold = true
	srv := pt.NewServer(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []model.Event
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, e := range newModel(t, srv).Stream(ctx, req()) {
			if e != nil {
				err = e
				return
			}
			got = append(got, ev)
			cancel()
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream ignored the cancelled context")
	}
	if len(got) == 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("events = %+v err = %v", got, err)
	}
}

func sameJSON(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func BenchmarkStreamStep(b *testing.B) {
	srv := pt.NewServer(b, sse(toolStep...))
	m := newModel(b, srv)
	r := req()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for ev, err := range m.Stream(ctx, r) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == model.ToolCall {
				n++
			}
		}
		if n != 1 {
			b.Fatalf("tool calls = %d", n)
		}
	}
}

func TestCountTokens(t *testing.T) {
	srv := pt.NewServer(t, pt.Reply{Header: http.Header{"Content-Type": {"application/json"}}, Chunks: [][]byte{[]byte(`{"input_tokens":4321}`)}})
	r := model.Request{System: "Be kind.", Messages: pt.ToolConversation(), Tools: []model.ToolSpec{pt.WeatherTool()}}
	n, err := newModel(t, srv).CountTokens(context.Background(), r)
	if err != nil || n != 4321 {
		t.Fatalf("CountTokens = %d, %v", n, err)
	}
	req := srv.Requests()[0]
	var body struct {
		Model    string            `json:"model"`
		System   []json.RawMessage `json:"system"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
		Max      *int              `json:"max_tokens"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	if req.Path != "/v1/messages/count_tokens" || body.Model != "claude-sonnet-4-5" || len(body.System) != 1 ||
		len(body.Messages) != 3 || len(body.Tools) != 1 || body.Max != nil {
		t.Fatalf("count request %s %s", req.Path, req.Body)
	}
	// A refusal is a classified model error.
	srv = pt.NewServer(t, errorReply(http.StatusTooManyRequests, "rate_limit_error", "slow down", nil))
	if _, err := newModel(t, srv).CountTokens(context.Background(), r); model.KindOf(err) != model.Throttled {
		t.Fatalf("throttled count: %v (kind %s)", err, model.KindOf(err))
	}
}
