package turntest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/provider/openai"
	pt "github.com/baton-run/baton/internal/provider/providertest"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// The OpenAI-compatible server is vLLM serving a reasoning model with a
// reasoning parser and a tool-call parser, which streams the thoughts as
// reasoning_content.
const (
	openaiModel     = "Qwen/Qwen3-32B"
	openaiWeatherID = "chatcmpl-tool-4f3a9c1e0b7d4e21a8d5c6b2f1e0a9d3"
	openaiEmailID   = "chatcmpl-tool-9b2e7d4c1a5f4b08b3c6d9e2a7f1c4e8"
)

// openaiSSE renders chat completion chunks, one per HTTP chunk, then [DONE].
func openaiSSE(datas ...string) pt.Reply {
	r := pt.Reply{Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}}
	for _, d := range append(datas, "[DONE]") {
		r.Chunks = append(r.Chunks, pt.SSE("", d))
	}
	return r
}

func openaiChunk(id, delta, finish string) string {
	f := "null"
	if finish != "" {
		f = js(finish)
	}
	return fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":1761300000,"model":%q,"choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s,"stop_reason":null}]}`, id, openaiModel, delta, f)
}

func openaiUsage(id string, in, out int) string {
	return fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":1761300000,"model":%q,"choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`, id, openaiModel, in, in+out, out)
}

// openaiWire is a step with reasoning, text and two parallel tool calls,
// then a final answer, as vLLM streams them.
func openaiWire() wire {
	const id1, id2 = "chatcmpl-7d1c0a7e9b0f4c1a9e3b", "chatcmpl-2a8f5e6d4c3b4a1f8e7d"
	step1 := []string{openaiChunk(id1, `{"role":"assistant","content":""}`, "")}
	for _, s := range reasoningPieces {
		step1 = append(step1, openaiChunk(id1, `{"reasoning_content":`+js(s)+`}`, ""))
	}
	for _, s := range textPieces {
		step1 = append(step1, openaiChunk(id1, `{"content":`+js(s)+`}`, ""))
	}
	step1 = append(step1, openaiChunk(id1, `{"tool_calls":[{"id":"`+openaiWeatherID+`","type":"function","index":0,"function":{"name":"get_weather"}}]}`, ""))
	for _, s := range weatherArgs {
		step1 = append(step1, openaiChunk(id1, `{"tool_calls":[{"index":0,"function":{"arguments":`+js(s)+`}}]}`, ""))
	}
	step1 = append(step1, openaiChunk(id1, `{"tool_calls":[{"id":"`+openaiEmailID+`","type":"function","index":1,"function":{"name":"send_email"}}]}`, ""))
	for _, s := range emailArgs {
		step1 = append(step1, openaiChunk(id1, `{"tool_calls":[{"index":1,"function":{"arguments":`+js(s)+`}}]}`, ""))
	}
	step1 = append(step1, openaiChunk(id1, `{"content":""}`, "tool_calls"), openaiUsage(id1, 612, 143))

	step2 := []string{openaiChunk(id2, `{"role":"assistant","content":""}`, "")}
	for _, s := range finalPieces {
		step2 = append(step2, openaiChunk(id2, `{"content":`+js(s)+`}`, ""))
	}
	step2 = append(step2, openaiChunk(id2, `{"content":""}`, "stop"), openaiUsage(id2, 801, 19))

	return wire{
		replies:   []pt.Reply{openaiSSE(step1...), openaiSSE(step2...)},
		weatherID: openaiWeatherID,
		emailID:   openaiEmailID,
		model: func(t testing.TB, url string) model.Model {
			m, err := openai.New(openai.Config{Model: openaiModel, APIKey: "sk-test", BaseURL: url + "/v1"})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	}
}

// openaiBody is a chat completions request.
type openaiBody struct {
	Model         string          `json:"model"`
	Stream        bool            `json:"stream"`
	MaxTokens     int             `json:"max_tokens"`
	StreamOptions map[string]bool `json:"stream_options"`
	Messages      []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
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

// openaiText reads a message's content: a string, or text parts.
func openaiText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		t.Fatalf("content %s: %v", raw, err)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func decodeOpenAI(t *testing.T, rq pt.Request) openaiBody {
	t.Helper()
	if rq.Method != http.MethodPost || rq.Path != "/v1/chat/completions" || rq.Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("request %s %s", rq.Method, rq.Path)
	}
	var body openaiBody
	if err := json.Unmarshal(rq.Body, &body); err != nil {
		t.Fatalf("%v: %s", err, rq.Body)
	}
	if body.Model != openaiModel || !body.Stream || body.MaxTokens != MaxTokens || !body.StreamOptions["include_usage"] {
		t.Fatalf("model/stream/max_tokens: %s", rq.Body)
	}
	// The system prompt is the first message of every step.
	if len(body.Messages) == 0 || body.Messages[0].Role != "system" || openaiText(t, body.Messages[0].Content) != System {
		t.Fatalf("system message: %s", rq.Body)
	}
	var names []string
	for _, tl := range body.Tools {
		names = append(names, tl.Function.Name)
		if tl.Type != "function" || tl.Function.Description == "" || tl.Function.Parameters["type"] != "object" || tl.Function.Parameters["required"] == nil {
			t.Fatalf("tool %s = %+v", tl.Function.Name, tl)
		}
	}
	if !slices.Equal(names, demoToolNames) {
		t.Fatalf("tools = %v, want %v", names, demoToolNames)
	}
	return body
}

// TestOpenAIApprovalRoundTrip runs a turn on the chat completions provider
// through a suspension for approval and a resumption in a fresh invocation,
// and checks that the request made after the resumption is what the chat
// completions API expects: the assistant message with its text and both
// tool_calls under the server's ids, then one role "tool" message per call
// with its tool_call_id, in call order, the denied one carrying the denial
// (the API has no error flag, so the text says "Error: ").
func TestOpenAIApprovalRoundTrip(t *testing.T) {
	decisions(t, func(t *testing.T, d reducer.Decision) {
		o := runTurn(t, openaiWire(), d)

		first := decodeOpenAI(t, o.requests[0])
		if len(first.Messages) != 2 || first.Messages[1].Role != "user" || openaiText(t, first.Messages[1].Content) != UserText {
			t.Fatalf("first request messages = %s", o.requests[0].Body)
		}

		body := decodeOpenAI(t, o.requests[1])
		raw := o.requests[1].Body
		ms := body.Messages
		roles := make([]string, len(ms))
		for i, m := range ms {
			roles[i] = m.Role
		}
		if want := []string{"system", "user", "assistant", "tool", "tool"}; !slices.Equal(roles, want) {
			t.Fatalf("roles after the resume = %v, want %v: %s", roles, want, raw)
		}
		if got := openaiText(t, ms[1].Content); got != UserText {
			t.Fatalf("user message = %q", got)
		}

		asst := ms[2]
		if got := openaiText(t, asst.Content); got != joined(textPieces) {
			t.Fatalf("assistant content = %q", got)
		}
		calls := asst.ToolCalls
		if len(calls) != 2 {
			t.Fatalf("assistant tool_calls = %s", raw)
		}
		if c := calls[0]; c.ID != openaiWeatherID || c.Type != "function" || c.Function.Name != "get_weather" || !sameJSON(t, json.RawMessage(c.Function.Arguments), joined(weatherArgs)) {
			t.Fatalf("first tool call = %+v", c)
		}
		if c := calls[1]; c.ID != openaiEmailID || c.Type != "function" || c.Function.Name != "send_email" || !sameJSON(t, json.RawMessage(c.Function.Arguments), joined(emailArgs)) {
			t.Fatalf("second tool call = %+v", c)
		}

		for i, want := range o.results {
			m := ms[3+i]
			if m.ToolCallID != want.id {
				t.Fatalf("tool message %d answers %q, want %q", i, m.ToolCallID, want.id)
			}
			text := want.text
			if want.error {
				text = "Error: " + text
			}
			if got := openaiText(t, m.Content); got != text {
				t.Fatalf("tool message %d = %q, want %q", i, got, text)
			}
		}
		if d == reducer.Deny && !strings.Contains(openaiText(t, ms[4].Content), conversation.DeniedText) {
			t.Fatal("the denial text is not in the tool message")
		}
	})
}
