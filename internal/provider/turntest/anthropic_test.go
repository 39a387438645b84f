package turntest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/provider/anthropic"
	pt "github.com/baton-run/baton/internal/provider/providertest"
	"github.com/baton-run/baton/pkg/reducer"
)

const (
	anthropicWeatherID = "toolu_01D7FLrfh4GYq7yT1ULFeyMV"
	anthropicEmailID   = "toolu_01Hm8cXJ8s6SLeBMqx4yvXzQ"
	anthropicSignature = "EqQBCkgIBxABGAIiQL6pBK2Yq3LMDsUQ8g+Fmw3QmTUOFG2KLNzIq7cBX4l6Q2bVFoNmSwFyqYx5Xm7qZ1eEFkQ3H3Z3BfbS3j9rY3cSDBkk5HfLkXqDs4nPoRoMWVhGc2yE3oXo0wYgIjA="
	anthropicBudget    = 2048
)

// anthropicSSE renders Messages API events, one event per HTTP chunk.
func anthropicSSE(pairs ...string) pt.Reply {
	r := pt.Reply{Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}, "Request-Id": {"req_011CUqWuCP9aAYRxwDvH7vJp"}}}
	for i := 0; i+1 < len(pairs); i += 2 {
		r.Chunks = append(r.Chunks, pt.SSE(pairs[i], pairs[i+1]))
	}
	return r
}

func anthropicStart(id string, out int) string {
	return fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1203,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%d,"service_tier":"standard"}}}`, id, out)
}

func anthropicDelta(index int, delta string) []string {
	return []string{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, index, delta)}
}

func anthropicStartBlock(index int, block string) []string {
	return []string{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, index, block)}
}

func anthropicStop(index int) []string {
	return []string{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index)}
}

// anthropicWire is a thinking step with text and two parallel tool calls,
// then a final answer, as the Messages API streams them.
func anthropicWire() wire {
	var step1 []string
	add := func(p ...string) { step1 = append(step1, p...) }
	add("message_start", anthropicStart("msg_01XFDUDYJgAACzvnptvVoYEL", 4))
	add(anthropicStartBlock(0, `{"type":"thinking","thinking":"","signature":""}`)...)
	for _, s := range reasoningPieces {
		add(anthropicDelta(0, `{"type":"thinking_delta","thinking":`+js(s)+`}`)...)
	}
	add(anthropicDelta(0, `{"type":"signature_delta","signature":`+js(anthropicSignature)+`}`)...)
	add(anthropicStop(0)...)
	add(anthropicStartBlock(1, `{"type":"text","text":""}`)...)
	add("ping", `{"type": "ping"}`)
	for _, s := range textPieces {
		add(anthropicDelta(1, `{"type":"text_delta","text":`+js(s)+`}`)...)
	}
	add(anthropicStop(1)...)
	add(anthropicStartBlock(2, `{"type":"tool_use","id":"`+anthropicWeatherID+`","name":"get_weather","input":{}}`)...)
	add(anthropicDelta(2, `{"type":"input_json_delta","partial_json":""}`)...)
	for _, s := range weatherArgs {
		add(anthropicDelta(2, `{"type":"input_json_delta","partial_json":`+js(s)+`}`)...)
	}
	add(anthropicStop(2)...)
	add(anthropicStartBlock(3, `{"type":"tool_use","id":"`+anthropicEmailID+`","name":"send_email","input":{}}`)...)
	for _, s := range emailArgs {
		add(anthropicDelta(3, `{"type":"input_json_delta","partial_json":`+js(s)+`}`)...)
	}
	add(anthropicStop(3)...)
	add("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":187}}`)
	add("message_stop", `{"type":"message_stop"}`)

	var step2 []string
	add2 := func(p ...string) { step2 = append(step2, p...) }
	add2("message_start", anthropicStart("msg_01Q8Faay6S4t1nGzJbL3kQ2m", 1))
	add2(anthropicStartBlock(0, `{"type":"text","text":""}`)...)
	for _, s := range finalPieces {
		add2(anthropicDelta(0, `{"type":"text_delta","text":`+js(s)+`}`)...)
	}
	add2(anthropicStop(0)...)
	add2("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":21}}`)
	add2("message_stop", `{"type":"message_stop"}`)

	return wire{
		replies:   []pt.Reply{anthropicSSE(step1...), anthropicSSE(step2...)},
		weatherID: anthropicWeatherID,
		emailID:   anthropicEmailID,
		signature: anthropicSignature,
		model: func(t testing.TB, url string) model.Model {
			m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "sk-ant-test", BaseURL: url, ThinkingBudget: anthropicBudget})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	}
}

// anthropicBody is a Messages API request.
type anthropicBody struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	System    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Thinking struct {
		Type   string `json:"type"`
		Budget int    `json:"budget_tokens"`
	} `json:"thinking"`
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	Messages []struct {
		Role    string           `json:"role"`
		Content []anthropicBlock `json:"content"`
	} `json:"messages"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   *bool           `json:"is_error"`
	// Content is a tool result's: a string or text blocks.
	Content json.RawMessage `json:"content"`
}

// anthropicResultText reads a tool_result's content, a string or an array
// of text blocks.
func anthropicResultText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatalf("tool_result content %s: %v", raw, err)
	}
	out := ""
	for _, b := range blocks {
		if b.Type != "text" {
			t.Fatalf("tool_result content block %q", b.Type)
		}
		out += b.Text
	}
	return out
}

func decodeAnthropic(t *testing.T, rq pt.Request) anthropicBody {
	t.Helper()
	if rq.Method != http.MethodPost || rq.Path != "/v1/messages" {
		t.Fatalf("request %s %s", rq.Method, rq.Path)
	}
	var body anthropicBody
	if err := json.Unmarshal(rq.Body, &body); err != nil {
		t.Fatalf("%v: %s", err, rq.Body)
	}
	// Every step carries the system prompt, the tools and the thinking
	// configuration.
	if body.Model != "claude-sonnet-4-5" || !body.Stream || body.MaxTokens != MaxTokens {
		t.Fatalf("model/stream/max_tokens: %s", rq.Body)
	}
	if len(body.System) != 1 || body.System[0].Type != "text" || body.System[0].Text != System {
		t.Fatalf("system = %+v", body.System)
	}
	if body.Thinking.Type != "enabled" || body.Thinking.Budget != anthropicBudget {
		t.Fatalf("thinking = %+v", body.Thinking)
	}
	var names []string
	for _, tl := range body.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema["type"] != "object" || tl.InputSchema["properties"] == nil || tl.InputSchema["required"] == nil {
			t.Fatalf("tool %s = %+v", tl.Name, tl)
		}
	}
	if !slices.Equal(names, demoToolNames) {
		t.Fatalf("tools = %v, want %v", names, demoToolNames)
	}
	return body
}

// TestAnthropicApprovalRoundTrip runs a turn on the Anthropic provider
// through a suspension for approval and a resumption in a fresh invocation,
// and checks that the request made after the resumption is the
// conversation the Messages API expects: the assistant's thinking block
// echoed with its signature, both tool_use blocks with the server's ids,
// then one user message of tool_result blocks in call order, the denied one
// an error carrying the denial.
func TestAnthropicApprovalRoundTrip(t *testing.T) {
	decisions(t, func(t *testing.T, d reducer.Decision) {
		o := runTurn(t, anthropicWire(), d)

		first := decodeAnthropic(t, o.requests[0])
		if len(first.Messages) != 1 || first.Messages[0].Role != "user" || len(first.Messages[0].Content) != 1 ||
			first.Messages[0].Content[0].Type != "text" || first.Messages[0].Content[0].Text != UserText {
			t.Fatalf("first request messages = %s", o.requests[0].Body)
		}

		body := decodeAnthropic(t, o.requests[1])
		raw := o.requests[1].Body
		ms := body.Messages
		if len(ms) != 3 || ms[0].Role != "user" || ms[1].Role != "assistant" || ms[2].Role != "user" {
			t.Fatalf("messages after the resume: %s", raw)
		}
		if c := ms[0].Content; len(c) != 1 || c[0].Type != "text" || c[0].Text != UserText {
			t.Fatalf("user message = %+v", c)
		}

		// The assistant turn, as streamed: thinking (first, as the API
		// requires with thinking on), text, then both calls.
		asst := ms[1].Content
		if len(asst) != 4 {
			t.Fatalf("assistant content = %s", raw)
		}
		if b := asst[0]; b.Type != "thinking" || b.Thinking != joined(reasoningPieces) || b.Signature != anthropicSignature {
			t.Fatalf("thinking block = %+v", b)
		}
		if b := asst[1]; b.Type != "text" || b.Text != joined(textPieces) {
			t.Fatalf("text block = %+v", b)
		}
		if b := asst[2]; b.Type != "tool_use" || b.ID != anthropicWeatherID || b.Name != "get_weather" || !sameJSON(t, b.Input, joined(weatherArgs)) {
			t.Fatalf("first tool_use = %+v", b)
		}
		if b := asst[3]; b.Type != "tool_use" || b.ID != anthropicEmailID || b.Name != "send_email" || !sameJSON(t, b.Input, joined(emailArgs)) {
			t.Fatalf("second tool_use = %+v", b)
		}

		// The next user message holds only tool_result blocks, one per call,
		// in call order.
		res := ms[2].Content
		if len(res) != len(o.results) {
			t.Fatalf("tool results = %s", raw)
		}
		for i, want := range o.results {
			b := res[i]
			if b.Type != "tool_result" || b.ToolUseID != want.id {
				t.Fatalf("result %d = %+v, want tool_result for %s", i, b, want.id)
			}
			if got := anthropicResultText(t, b.Content); got != want.text {
				t.Fatalf("result %d text = %q, want %q", i, got, want.text)
			}
			if isErr := b.IsError != nil && *b.IsError; isErr != want.error {
				t.Fatalf("result %d is_error = %v, want %v", i, isErr, want.error)
			}
		}
	})
}
