package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/baton-run/baton/internal/model"
	pt "github.com/baton-run/baton/internal/provider/providertest"
)

const modelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

var streamHeader = http.Header{
	"Content-Type":     {"application/vnd.amazon.eventstream"},
	"X-Amzn-Requestid": {"6a1b8f0e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"},
}

// frame encodes one event-stream message with the SDK's own encoder.
func frame(tb testing.TB, headers map[string]string, payload string) []byte {
	tb.Helper()
	var msg eventstream.Message
	for _, k := range []string{":event-type", ":exception-type", ":content-type", ":message-type"} {
		if v, ok := headers[k]; ok {
			msg.Headers.Set(k, eventstream.StringValue(v))
		}
	}
	msg.Payload = []byte(payload)
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, msg); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// ev is an event frame; exc an exception frame.
type ev struct{ typ, payload string }

func exc(typ, payload string) ev { return ev{"!" + typ, payload} }

func stream(tb testing.TB, evs ...ev) pt.Reply {
	tb.Helper()
	r := pt.Reply{Header: streamHeader}
	for _, e := range evs {
		if strings.HasPrefix(e.typ, "!") {
			r.Chunks = append(r.Chunks, frame(tb, map[string]string{":message-type": "exception", ":exception-type": e.typ[1:], ":content-type": "application/json"}, e.payload))
			continue
		}
		r.Chunks = append(r.Chunks, frame(tb, map[string]string{":message-type": "event", ":event-type": e.typ, ":content-type": "application/json"}, e.payload))
	}
	return r
}

const metadata = `{"metrics":{"latencyMs":812},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0","usage":{"cacheReadInputTokens":100,"cacheWriteInputTokens":0,"inputTokens":472,"outputTokens":89,"totalTokens":661}}`

var (
	textStep = []ev{
		{"messageStart", `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGH","role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello"},"p":"abcdefghijklmnopqrstuvwx"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" there!"},"p":"abcdefghijklmnopqrstuvwxyzABCDEF"}`},
		{"contentBlockStop", `{"contentBlockIndex":0,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"}`},
		{"messageStop", `{"p":"abcdefghijklmnopqrstuvwxyzABC","stopReason":"end_turn"}`},
		{"metadata", metadata},
	}
	toolStep = []ev{
		{"messageStart", `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGH","role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Let me check."},"p":"abcdefghijk"}`},
		{"contentBlockStop", `{"contentBlockIndex":0,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"}`},
		{"contentBlockStart", `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuv","start":{"toolUse":{"name":"get_weather","toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":""}},"p":"abcdefghijklmnopqrstu"}`},
		{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\": \"Pa"}},"p":"abcdefghijklmn"}`},
		{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"ris\"}"}},"p":"abcdefghijklmnopqrstuvwxyzABCD"}`},
		{"contentBlockStop", `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLM"}`},
		{"messageStop", `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXY","stopReason":"tool_use"}`},
		{"metadata", metadata},
	}
	twoToolStep = []ev{
		{"messageStart", `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGH","role":"assistant"}`},
		{"contentBlockStart", `{"contentBlockIndex":0,"p":"abcdefghijklmnopqrstuv","start":{"toolUse":{"name":"get_weather","toolUseId":"tooluse_A"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"city\":\"Paris\"}"}},"p":"abcdefgh"}`},
		{"contentBlockStop", `{"contentBlockIndex":0,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLM"}`},
		{"contentBlockStart", `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuv","start":{"toolUse":{"name":"get_time","toolUseId":"tooluse_B"}}}`},
		{"contentBlockStop", `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLM"}`},
		{"messageStop", `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXY","stopReason":"tool_use"}`},
		{"metadata", metadata},
	}
	reasoningStep = []ev{
		{"messageStart", `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGH","role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"The user wants a greeting."}},"p":"abcdefghijklmnopqrstuvwxyzA"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":" Keep it short."}},"p":"abcdefghijklmnopqrstu"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"ErcBCkgIBBABGAIiQLn3Ns3bT3ZsTjNq"}},"p":"abcdefghijklmno"}`},
		{"contentBlockStop", `{"contentBlockIndex":0,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"}`},
		{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"text":"Hi!"},"p":"abcdefghijklmnopqrstuvwx"}`},
		{"contentBlockStop", `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"}`},
		{"messageStop", `{"p":"abcdefghijklmnopqrstuvwxyzABC","stopReason":"max_tokens"}`},
		{"metadata", metadata},
	}
)

func errorReply(status int, errType, msg string, header http.Header) pt.Reply {
	h := http.Header{
		"Content-Type":     {"application/json"},
		"X-Amzn-Errortype": {errType + ":http://internal.amazon.com/coral/com.amazon.bedrock/"},
		"X-Amzn-Requestid": {"0f6c3b1e-err"},
	}
	for k, v := range header {
		h[k] = v
	}
	body, _ := json.Marshal(map[string]string{"message": msg})
	return pt.Reply{Status: status, Header: h, Chunks: [][]byte{body}}
}

func newModel(tb testing.TB, srv *pt.Server, mut ...func(*Config)) *Model {
	tb.Helper()
	client := bedrockruntime.New(bedrockruntime.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""),
		// Retries left on here on purpose: the provider must turn them off.
		RetryMaxAttempts: 3,
		HTTPClient:       &http.Client{Transport: plainBodyTransport{http.DefaultTransport}},
	})
	cfg := Config{Model: modelID, MaxTokens: 1024}
	for _, f := range mut {
		f(&cfg)
	}
	m, err := New(client, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// plainBodyTransport hides the WriteTo method of the SDK's request body.
// The SDK closes the request body as soon as the response headers arrive,
// while net/http (HTTP/1.1) may still be checking the body for bytes past
// its Content-Length; the body's WriteTo then reports io.EOF as an error and
// net/http drops the connection under the streaming response ("use of
// closed network connection"). A local server answering instantly hits that
// race about once in a few hundred requests; a plain Read returns a clean
// EOF after Close.
type plainBodyTransport struct{ base http.RoundTripper }

type plainBody struct{ io.ReadCloser }

func (t plainBodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r = r.Clone(r.Context())
		r.Body = plainBody{r.Body}
	}
	return t.base.RoundTrip(r)
}

func req() model.Request {
	return model.Request{System: "You are terse.", Messages: pt.UserText("Hi"), Tools: []model.ToolSpec{pt.WeatherTool()}}
}

func TestTextOnly(t *testing.T) {
	srv := pt.NewServer(t, stream(t, textStep...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	if got := pt.Text(evs, model.TextDelta); got != "Hello there!" {
		t.Fatalf("text = %q", got)
	}
	last := evs[len(evs)-1]
	if last.Type != model.Finish || last.Stop != model.StopEnd || last.Usage != (model.Usage{InputTokens: 572, OutputTokens: 89}) {
		t.Fatalf("finish = %+v", last)
	}
	rq := srv.Requests()[0]
	if rq.Method != http.MethodPost || rq.Path != "/model/"+modelID+"/converse-stream" {
		t.Fatalf("request %s %s", rq.Method, rq.Path)
	}
	if auth := rq.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/bedrock/aws4_request") {
		t.Fatalf("authorization = %q", auth)
	}
	var body struct {
		System          []map[string]string `json:"system"`
		InferenceConfig struct {
			MaxTokens int `json:"maxTokens"`
		} `json:"inferenceConfig"`
		ToolConfig struct {
			Tools []struct {
				ToolSpec struct {
					Name        string `json:"name"`
					Description string `json:"description"`
					InputSchema struct {
						JSON map[string]any `json:"json"`
					} `json:"inputSchema"`
				} `json:"toolSpec"`
			} `json:"tools"`
		} `json:"toolConfig"`
		Messages []struct {
			Role    string              `json:"role"`
			Content []map[string]string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(rq.Body, &body); err != nil {
		t.Fatalf("%v: %s", err, rq.Body)
	}
	if len(body.System) != 1 || body.System[0]["text"] != "You are terse." || body.InferenceConfig.MaxTokens != 1024 {
		t.Fatalf("body = %s", rq.Body)
	}
	if len(body.Messages) != 1 || body.Messages[0].Role != "user" || body.Messages[0].Content[0]["text"] != "Hi" {
		t.Fatalf("messages = %s", rq.Body)
	}
	tools := body.ToolConfig.Tools
	if len(tools) != 1 || tools[0].ToolSpec.Name != "get_weather" || tools[0].ToolSpec.Description == "" ||
		tools[0].ToolSpec.InputSchema.JSON["type"] != "object" || tools[0].ToolSpec.InputSchema.JSON["required"].([]any)[0] != "city" {
		t.Fatalf("tools = %s", rq.Body)
	}
}

func TestOneToolCall(t *testing.T) {
	srv := pt.NewServer(t, stream(t, toolStep...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	calls := pt.Calls(evs)
	if len(calls) != 1 || calls[0].ID != "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q" || calls[0].Name != "get_weather" || string(calls[0].Input) != `{"city": "Paris"}` {
		t.Fatalf("calls = %+v", calls)
	}
	if pt.Text(evs, model.TextDelta) != "Let me check." || evs[len(evs)-1].Stop != model.StopToolCalls {
		t.Fatalf("events = %+v", evs)
	}
}

func TestTwoToolCalls(t *testing.T) {
	srv := pt.NewServer(t, stream(t, twoToolStep...))
	evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	calls := pt.Calls(evs)
	if len(calls) != 2 || calls[0].ID != "tooluse_A" || string(calls[0].Input) != `{"city":"Paris"}` ||
		calls[1].ID != "tooluse_B" || calls[1].Name != "get_time" || string(calls[1].Input) != `{}` {
		t.Fatalf("calls = %+v", calls)
	}
	if evs[len(evs)-1].Stop != model.StopToolCalls {
		t.Fatalf("last = %+v", evs[len(evs)-1])
	}
}

func TestReasoning(t *testing.T) {
	srv := pt.NewServer(t, stream(t, reasoningStep...))
	m := newModel(t, srv, func(c *Config) { c.ThinkingBudget = 512 })
	evs, err := pt.Collect(m.Stream(context.Background(), req()))
	if err != nil {
		t.Fatal(err)
	}
	var types []model.EventType
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if want := []model.EventType{model.ReasoningDelta, model.ReasoningDelta, model.ReasoningSignature, model.TextDelta, model.Finish}; !slices.Equal(types, want) {
		t.Fatalf("types = %v, want %v", types, want)
	}
	if pt.Text(evs, model.ReasoningDelta) != "The user wants a greeting. Keep it short." ||
		pt.Text(evs, model.ReasoningSignature) != "ErcBCkgIBBABGAIiQLn3Ns3bT3ZsTjNq" || evs[len(evs)-1].Stop != model.StopLength {
		t.Fatalf("events = %+v", evs)
	}
	var body struct {
		Fields struct {
			Thinking struct {
				Type   string `json:"type"`
				Budget int    `json:"budget_tokens"`
			} `json:"thinking"`
		} `json:"additionalModelRequestFields"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil || body.Fields.Thinking.Type != "enabled" || body.Fields.Thinking.Budget != 512 {
		t.Fatalf("additionalModelRequestFields = %+v (%v)", body.Fields, err)
	}
}

func TestExceptionMidStream(t *testing.T) {
	cases := []struct {
		exc  ev
		kind model.ErrorKind
	}{
		{exc("throttlingException", `{"message":"Too many tokens, please wait before trying again."}`), model.Throttled},
		{exc("serviceUnavailableException", `{"message":"Bedrock is unable to process your request."}`), model.Overloaded},
		{exc("modelStreamErrorException", `{"message":"Model stream error","originalStatusCode":529,"originalMessage":"Overloaded"}`), model.Overloaded},
		{exc("internalServerException", `{"message":"The system encountered an unexpected error during processing. Try your request again."}`), model.Unavailable},
	}
	for _, c := range cases {
		srv := pt.NewServer(t, stream(t, append(slices.Clone(textStep[:2]), c.exc)...))
		evs, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
		if pt.Text(evs, model.TextDelta) != "Hello" {
			t.Errorf("%s: events = %+v", c.exc.typ, evs)
		}
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != c.kind {
			t.Errorf("%s: err = %v, want %s", c.exc.typ, err, c.kind)
		}
	}
}

func TestTruncatedStream(t *testing.T) {
	// Ends cleanly after two frames: no messageStop.
	srv := pt.NewServer(t, stream(t, textStep[:2]...))
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if model.KindOf(err) != model.Interrupted || !strings.Contains(err.Error(), "before the model finished") {
		t.Fatalf("err = %v", err)
	}
	// Cut mid-frame.
	r := stream(t, textStep[:3]...)
	last := r.Chunks[2]
	r.Chunks[2] = last[:len(last)/2]
	r.Abort = true
	srv = pt.NewServer(t, r)
	_, err = pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	if model.KindOf(err) != model.Interrupted {
		t.Fatalf("err = %v", err)
	}
}

func TestThrottledIsRetryable(t *testing.T) {
	srv := pt.NewServer(t,
		errorReply(429, "ThrottlingException", "Too many requests, please wait before trying again.", nil),
		stream(t, textStep...),
	)
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Throttled || !me.Transient() {
		t.Fatalf("err = %#v, want throttled", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1 (the SDK must not retry on its own)", n)
	}
}

func TestUnavailableIsRetryable(t *testing.T) {
	srv := pt.NewServer(t, errorReply(503, "ServiceUnavailableException", "Bedrock is unable to process your request.", nil))
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.Overloaded || me.Status != 503 || !me.Retryable() {
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
		{errorReply(429, "ThrottlingException", "Too many requests", http.Header{"Retry-After": {"2"}}), model.Throttled},
		{errorReply(503, "ServiceUnavailableException", "unavailable", nil), model.Overloaded},
		{errorReply(400, "ValidationException", "Input is too long for requested model.", nil), model.ContextTooLong},
		{errorReply(400, "ValidationException", "The model returned the following errors: prompt is too long: 212345 tokens > 200000 maximum", nil), model.ContextTooLong},
		{errorReply(400, "ValidationException", "A conversation must alternate between user and assistant roles.", nil), model.InvalidRequest},
		{errorReply(403, "AccessDeniedException", "You don't have access to the model with the specified model ID.", nil), model.Auth},
		{errorReply(500, "InternalServerException", "internal", nil), model.Unavailable},
		{errorReply(502, "InternalServerException", "bad gateway", nil), model.Unavailable},
		{errorReply(408, "ModelTimeoutException", "Model has timed out in processing the request.", nil), model.Unavailable},
		{errorReply(404, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier.", nil), model.InvalidRequest},
	}
	for _, c := range cases {
		srv := pt.NewServer(t, c.reply)
		_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), req()))
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != c.kind || me.Status != c.reply.Status {
			t.Errorf("%d %s: err = %v, want kind %s", c.reply.Status, c.reply.Header.Get("X-Amzn-Errortype"), err, c.kind)
		}
		if c.reply.Header.Get("Retry-After") == "2" && me != nil && me.RetryAfter != 2*time.Second {
			t.Errorf("retry after = %v", me.RetryAfter)
		}
	}
}

func TestRequestEncodesToolRoundTrip(t *testing.T) {
	srv := pt.NewServer(t, stream(t, textStep...))
	r := model.Request{Messages: pt.ToolConversation(), Tools: []model.ToolSpec{pt.WeatherTool()}}
	if _, err := pt.Collect(newModel(t, srv).Stream(context.Background(), r)); err != nil {
		t.Fatal(err)
	}
	raw := srv.Requests()[0].Body
	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	ms := body.Messages
	if len(ms) != 3 || ms[0].Role != "user" || ms[1].Role != "assistant" || ms[2].Role != "user" {
		t.Fatalf("messages = %s", raw)
	}
	wantAsst := []string{
		`{"reasoningContent":{"reasoningText":{"signature":"sig-abc","text":"I should look both up."}}}`,
		`{"text":"Checking both."}`,
		`{"toolUse":{"input":{"city":"Paris"},"name":"get_weather","toolUseId":"call_paris"}}`,
		`{"toolUse":{"input":{"city":"London"},"name":"get_weather","toolUseId":"call_london"}}`,
	}
	if len(ms[1].Content) != len(wantAsst) {
		t.Fatalf("assistant = %s", raw)
	}
	for i, w := range wantAsst {
		if !sameJSON(t, ms[1].Content[i], w) {
			t.Fatalf("assistant block %d = %s, want %s", i, ms[1].Content[i], w)
		}
	}
	wantResults := []string{
		`{"toolResult":{"content":[{"text":"{\"temp_c\":18,\"sky\":\"clear\"}"}],"toolUseId":"call_paris"}}`,
		`{"toolResult":{"content":[{"text":"denied: the operator rejected this call"}],"status":"error","toolUseId":"call_london"}}`,
	}
	if len(ms[2].Content) != 2 || !sameJSON(t, ms[2].Content[0], wantResults[0]) || !sameJSON(t, ms[2].Content[1], wantResults[1]) {
		t.Fatalf("tool results = %s", raw)
	}
}

func TestToolInputNumbersStayExact(t *testing.T) {
	srv := pt.NewServer(t, stream(t, textStep...))
	conv := pt.ToolConversation()
	conv[1].Content[2].Input = json.RawMessage(`{"city":"Paris","id":12345678901234567890,"ratio":0.1}`)
	if _, err := pt.Collect(newModel(t, srv).Stream(context.Background(), model.Request{Messages: conv, Tools: []model.ToolSpec{pt.WeatherTool()}})); err != nil {
		t.Fatal(err)
	}
	if body := string(srv.Requests()[0].Body); !strings.Contains(body, `12345678901234567890`) || !strings.Contains(body, `0.1`) {
		t.Fatalf("body = %s", body)
	}
}

func TestDanglingToolCallRejectedBeforeSending(t *testing.T) {
	srv := pt.NewServer(t, stream(t, textStep...))
	_, err := pt.Collect(newModel(t, srv).Stream(context.Background(), model.Request{Messages: pt.ToolConversation()[:3]}))
	if model.KindOf(err) != model.InvalidRequest || len(srv.Requests()) != 0 {
		t.Fatalf("err = %v, requests = %d", err, len(srv.Requests()))
	}
}

func TestContextCancelled(t *testing.T) {
	srv := pt.NewServer(t, stream(t, textStep...))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := pt.Collect(newModel(t, srv).Stream(ctx, req()))
	if !errors.Is(err, context.Canceled) || model.KindOf(err) != model.Other {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	r := stream(t, textStep[:2]...)
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
	srv := pt.NewServer(b, stream(b, toolStep...))
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
	srv := pt.NewServer(t, pt.Reply{Header: http.Header{"Content-Type": {"application/json"}}, Chunks: [][]byte{[]byte(`{"inputTokens":777}`)}})
	r := model.Request{System: "Be kind.", Messages: pt.ToolConversation(), Tools: []model.ToolSpec{pt.WeatherTool()}}
	n, err := newModel(t, srv).CountTokens(context.Background(), r)
	if err != nil || n != 777 {
		t.Fatalf("CountTokens = %d, %v", n, err)
	}
	req := srv.Requests()[0]
	var body struct {
		Input struct {
			Converse struct {
				Messages   []json.RawMessage `json:"messages"`
				System     []json.RawMessage `json:"system"`
				ToolConfig struct {
					Tools []json.RawMessage `json:"tools"`
				} `json:"toolConfig"`
			} `json:"converse"`
		} `json:"input"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	c := body.Input.Converse
	if !strings.HasSuffix(req.Path, "/count-tokens") || len(c.Messages) != 3 || len(c.System) != 1 || len(c.ToolConfig.Tools) != 1 {
		t.Fatalf("count request %s %s", req.Path, req.Body)
	}
	srv = pt.NewServer(t, errorReply(http.StatusTooManyRequests, "ThrottlingException", "slow down", nil))
	if _, err := newModel(t, srv).CountTokens(context.Background(), r); model.KindOf(err) != model.Throttled {
		t.Fatalf("throttled count: %v (kind %s)", err, model.KindOf(err))
	}
}
