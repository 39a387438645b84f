package openai

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

var sseHeader = http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}, "X-Request-Id": {"req_test"}}

// chunk renders a chat.completion.chunk as OpenAI streams it.
func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}],"usage":null}`
}

const usageChunk = `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`

func sse(datas ...string) pt.Reply {
	pairs := make([]string, 0, 2*len(datas)+2)
	for _, d := range datas {
		pairs = append(pairs, "", d)
	}
	return pt.Reply{Header: sseHeader, Chunks: [][]byte{pt.SSE(pairs...)}}
}

var (
	textStep = []string{
		chunk(`{"role":"assistant","content":"","refusal":null}`, ""),
		chunk(`{"content":"Hello"}`, ""),
		chunk(`{"content":" there!"}`, ""),
		chunk(`{}`, "stop"),
		usageChunk,
		"[DONE]",
	}
	toolStep = []string{
		chunk(`{"role":"assistant","content":"Let me check.","refusal":null}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"city\":\"Paris\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		usageChunk,
		"[DONE]",
	}
	twoToolStep = []string{
		chunk(`{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Paris\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\": \"London\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		usageChunk,
		"[DONE]",
	}
	// vLLM with a reasoning parser streams the thoughts as reasoning_content.
	reasoningStep = []string{
		`{"id":"chatcmpl-3c1f","object":"chat.completion.chunk","created":1741569952,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"chatcmpl-3c1f","object":"chat.completion.chunk","created":1741569952,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"reasoning_content":"The user says hi."},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"chatcmpl-3c1f","object":"chat.completion.chunk","created":1741569952,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"reasoning":" Greet back."},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"chatcmpl-3c1f","object":"chat.completion.chunk","created":1741569952,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"content":"Hi!","reasoning_content":null},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"chatcmpl-3c1f","object":"chat.completion.chunk","created":1741569952,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"length","stop_reason":null}]}`,
		`{"id":"chatcmpl-3c1f","object":"chat.completion.chunk","created":1741569952,"model":"Qwen/QwQ-32B","choices":[],"usage":{"prompt_tokens":12,"total_tokens":40,"completion_tokens":28}}`,
		"[DONE]",
	}
)

func errorReply(status int, typ, code, msg string, header http.Header) pt.Reply {
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range header {
		h[k] = v
	}
	var c any
	if code != "" {
		c = code
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
	return pt.Reply{Status: status, Header: h, Chunks: [][]byte{body}}
}

func newModel(t testing.TB, srv *pt.Server) *Model {
	t.Helper()
	m, err := New(Config{Model: "gpt-4o", MaxTokens: 1024, APIKey: "sk-test", BaseURL: srv.URL + "/v1"})
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
	if last.Type != model.Finish || last.Stop != model.StopEnd || last.Usage != (model.Usage{InputTokens: 82, OutputTokens: 17}) {
		t.Fatalf("finish = %+v", last)
	}
	rq := srv.Requests()[0]
	if rq.Path != "/v1/chat/completions" || rq.Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("request %s auth %q", rq.Path, rq.Header.Get("Authorization"))
	}
	var body struct {
		Model         string          `json:"model"`
		Stream        bool            `json:"stream"`
		MaxTokens     int             `json:"max_tokens"`
		StreamOptions map[string]bool `json:"stream_options"`
		Messages      []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				Parameters  map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(rq.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "gpt-4o" || !body.Stream || body.MaxTokens != 1024 || !body.StreamOptions["include_usage"] {
		t.Fatalf("body = %s", rq.Body)
	}
	if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[0].Content != "You are terse." ||
		body.Messages[1].Role != "user" || body.Messages[1].Content != "Hi" {
		t.Fatalf("messages = %+v", body.Messages)
	}
	if len(body.Tools) != 1 || body.Tools[0].Type != "function" || body.Tools[0].Function.Name != "get_weather" ||
		body.Tools[0].Function.Parameters["required"].([]any)[0] != "city" {
		t.Fatalf("tools = %+v", body.Tools)
	}
}

func TestOneToolCall(t *testing.T) {
	srv := pt.NewServer(t, sse(toolStep...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	calls := pt.Calls(evs)
	if len(calls) != 1 || calls[0].ID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" || calls[0].Name != "get_weather" || string(calls[0].Input) != `{"city":"Paris"}` {
		t.Fatalf("calls = %+v", calls)
	}
	if pt.Text(evs, model.TextDelta) != "Let me check." || evs[len(evs)-1].Stop != model.StopToolCalls {
		t.Fatalf("events = %+v", evs)
	}
}

func TestTwoToolCalls(t *testing.T) {
	srv := pt.NewServer(t, sse(twoToolStep...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	calls := pt.Calls(evs)
	if len(calls) != 2 || calls[0].ID != "call_A" || string(calls[0].Input) != `{"city": "Paris"}` ||
		calls[1].ID != "call_B" || string(calls[1].Input) != `{"city": "London"}` {
		t.Fatalf("calls = %+v", calls)
	}
	if evs[len(evs)-1].Type != model.Finish || evs[len(evs)-1].Stop != model.StopToolCalls {
		t.Fatalf("last = %+v", evs[len(evs)-1])
	}
}

// TestToolCallWithoutID checks that a call the server gives no id keeps
// none: the runner, not the adapter, gives it a unique one.
func TestToolCallWithoutID(t *testing.T) {
	srv := pt.NewServer(t, sse(
		chunk(`{"tool_calls":[{"index":0,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		usageChunk,
		"[DONE]",
	))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	if calls := pt.Calls(evs); len(calls) != 2 || calls[0].ID != "" || calls[1].ID != "" ||
		string(calls[0].Input) != `{"city":"Oslo"}` || string(calls[1].Input) != `{"city":"Rome"}` {
		t.Fatalf("calls = %+v", calls)
	}
}

func TestOllamaStyleToolCallWithStop(t *testing.T) {
	// Ollama sends the whole call in one chunk and says "stop".
	srv := pt.NewServer(t, sse(
		`{"id":"chatcmpl-77","object":"chat.completion.chunk","created":1741569952,"model":"llama3.1","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_x1","index":0,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},"finish_reason":null}]}`,
		`{"id":"chatcmpl-77","object":"chat.completion.chunk","created":1741569952,"model":"llama3.1","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`,
		"[DONE]",
	))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	if calls := pt.Calls(evs); len(calls) != 1 || string(calls[0].Input) != `{"city":"Oslo"}` || evs[len(evs)-1].Stop != model.StopToolCalls {
		t.Fatalf("events = %+v", evs)
	}
}

func TestReasoning(t *testing.T) {
	srv := pt.NewServer(t, sse(reasoningStep...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	var types []model.EventType
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if want := []model.EventType{model.ReasoningDelta, model.ReasoningDelta, model.TextDelta, model.Finish}; !slices.Equal(types, want) {
		t.Fatalf("types = %v, want %v", types, want)
	}
	if pt.Text(evs, model.ReasoningDelta) != "The user says hi. Greet back." || pt.Text(evs, model.TextDelta) != "Hi!" {
		t.Fatalf("events = %+v", evs)
	}
	if last := evs[len(evs)-1]; last.Stop != model.StopLength || last.Usage != (model.Usage{InputTokens: 12, OutputTokens: 28}) {
		t.Fatalf("finish = %+v", last)
	}
}

func TestErrorMidStream(t *testing.T) {
	srv := pt.NewServer(t, sse(
		chunk(`{"role":"assistant","content":"Hel"}`, ""),
		`{"error":{"message":"The server is overloaded or not ready yet.","type":"server_overloaded","param":null,"code":null}}`,
	))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if pt.Text(evs, model.TextDelta) != "Hel" {
		t.Fatalf("events = %+v", evs)
	}
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Overloaded || me.Status != 0 {
		t.Fatalf("err = %#v", err)
	}
}

func TestBrokenStream(t *testing.T) {
	// The connection dies mid-chunk: half a JSON line, no terminator.
	body := pt.SSE("", chunk(`{"role":"assistant","content":"Hel"}`, ""))
	srv := pt.NewServer(t, pt.Reply{Header: sseHeader, Chunks: [][]byte{body, []byte(`data: {"id":"chatcmpl-B9`)}, Abort: true})
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Interrupted || pt.Text(evs, model.TextDelta) != "Hel" {
		t.Fatalf("events = %+v err = %#v", evs, err)
	}
	// A stream that ends cleanly but before any finish reason is broken too.
	srv = pt.NewServer(t, sse(textStep[:3]...))
	_, err = pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if model.KindOf(err) != model.Interrupted || !strings.Contains(err.Error(), "before the model finished") {
		t.Fatalf("err = %v", err)
	}
}

func TestThrottledIsRetryableWithItsHint(t *testing.T) {
	srv := pt.NewServer(t,
		errorReply(429, "requests", "rate_limit_exceeded", "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.", http.Header{"Retry-After-Ms": {"1500"}}),
		sse(textStep...),
	)
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Throttled || !me.Transient() || me.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("err = %#v, want throttled with the 1.5s retry-after-ms", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1 (the SDK must not retry on its own)", n)
	}
}

func TestUnavailableIsRetryable(t *testing.T) {
	srv := pt.NewServer(t, errorReply(503, "server_error", "", "The engine is currently overloaded, please try again later", nil))
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Overloaded || me.Status != 503 || !me.Retryable() {
		t.Fatalf("err = %#v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1", n)
	}
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		reply pt.Reply
		kind  model.ErrorKind
	}{
		{errorReply(429, "requests", "rate_limit_exceeded", "Rate limit reached", nil), model.Throttled},
		{errorReply(503, "server_error", "", "overloaded", nil), model.Overloaded},
		{errorReply(400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.", nil), model.ContextTooLong},
		// vLLM says it in the message only.
		{errorReply(400, "BadRequestError", "", "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.", nil), model.ContextTooLong},
		{errorReply(400, "invalid_request_error", "", "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", nil), model.InvalidRequest},
		{errorReply(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided", nil), model.Auth},
		{errorReply(500, "server_error", "", "The server had an error", nil), model.Unavailable},
		{errorReply(502, "server_error", "", "Bad gateway", nil), model.Unavailable},
		{errorReply(504, "server_error", "", "Gateway timeout", nil), model.Unavailable},
		{errorReply(404, "invalid_request_error", "model_not_found", "The model `gpt-nope` does not exist", nil), model.InvalidRequest},
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
	r := model.Request{System: "sys", Messages: pt.ToolConversation(), Tools: []model.ToolSpec{pt.WeatherTool()}}
	if _, err := pt.Collect(newModel(t, srv).Stream(context.Background(), r)); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Role       string  `json:"role"`
			Content    *string `json:"content"`
			ToolCallID string  `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	raw := srv.Requests()[0].Body
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	ms := body.Messages
	if len(ms) != 5 {
		t.Fatalf("messages = %s", raw)
	}
	var roles []string
	for _, m := range ms {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "tool", "tool"}) {
		t.Fatalf("roles = %v", roles)
	}
	a := ms[2]
	if a.Content == nil || *a.Content != "Checking both." || len(a.ToolCalls) != 2 ||
		a.ToolCalls[0].ID != "call_paris" || a.ToolCalls[0].Type != "function" || a.ToolCalls[0].Function.Name != "get_weather" ||
		a.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || a.ToolCalls[1].ID != "call_london" {
		t.Fatalf("assistant = %s", raw)
	}
	if strings.Contains(string(raw), "I should look both up.") {
		t.Fatal("reasoning was sent back")
	}
	if ms[3].ToolCallID != "call_paris" || *ms[3].Content != `{"temp_c":18,"sky":"clear"}` {
		t.Fatalf("first result = %+v", ms[3])
	}
	if ms[4].ToolCallID != "call_london" || *ms[4].Content != "Error: denied: the operator rejected this call" {
		t.Fatalf("denied result = %+v", ms[4])
	}
}

func TestDanglingToolCallRejectedBeforeSending(t *testing.T) {
	srv := pt.NewServer(t, sse(textStep...))
	conv := pt.ToolConversation()[:3]
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
	r := sse(textStep[:2]...)
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
