package turntest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/provider/bedrock"
	pt "github.com/baton-run/baton/internal/provider/providertest"
	"github.com/baton-run/baton/pkg/reducer"
)

const (
	bedrockModel     = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	bedrockWeatherID = "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"
	bedrockEmailID   = "tooluse_Vq3rTn0GSwqXmF1yD8bH2A"
	bedrockSignature = "ErcBCkgIBxABGAIiQFq8Jc2vYtR8mJHyq0bVw3Xn5kTz6pD9sLfGh1aQeR7uWvN2cE4xBmKjS0oPiZ3yT5gH8dUfA9lCw6qVr1nXsIMtYWC4yO2bJ4eZ7kRpGgz3"
	bedrockBudget    = 2048
)

// bedrockEvent is one event-stream message.
type bedrockEvent struct{ typ, payload string }

// bedrockStream encodes events with the SDK's own event-stream encoder, one
// frame per HTTP chunk, as ConverseStream answers.
func bedrockStream(tb testing.TB, evs ...bedrockEvent) pt.Reply {
	tb.Helper()
	r := pt.Reply{Header: http.Header{
		"Content-Type":     {"application/vnd.amazon.eventstream"},
		"X-Amzn-Requestid": {"2b7c9e4d-1f3a-4c8e-9d6b-5a0e7f1c3b2d"},
	}}
	for _, e := range evs {
		var msg eventstream.Message
		msg.Headers.Set(":event-type", eventstream.StringValue(e.typ))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Payload = []byte(e.payload)
		var buf bytes.Buffer
		if err := eventstream.NewEncoder().Encode(&buf, msg); err != nil {
			tb.Fatal(err)
		}
		r.Chunks = append(r.Chunks, buf.Bytes())
	}
	return r
}

// pad is the random-length "p" field Bedrock adds to every event.
func pad(n int) string {
	return js(strings.Repeat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 2)[:n])
}

func bedrockDelta(index int, delta string) bedrockEvent {
	return bedrockEvent{"contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":%d,"delta":%s,"p":%s}`, index, delta, pad(7+3*index))}
}

func bedrockStop(index int) bedrockEvent {
	return bedrockEvent{"contentBlockStop", fmt.Sprintf(`{"contentBlockIndex":%d,"p":%s}`, index, pad(31))}
}

func bedrockToolStart(index int, id, name string) bedrockEvent {
	return bedrockEvent{"contentBlockStart", fmt.Sprintf(`{"contentBlockIndex":%d,"p":%s,"start":{"toolUse":{"name":%q,"toolUseId":%q}}}`, index, pad(22), name, id)}
}

func bedrockMetadata(in, out int) bedrockEvent {
	return bedrockEvent{"metadata", fmt.Sprintf(`{"metrics":{"latencyMs":1840},"p":%s,"usage":{"cacheReadInputTokens":0,"cacheWriteInputTokens":0,"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}}`, pad(40), in, out, in+out)}
}

// bedrockWire is a reasoning step with text and two parallel tool uses,
// then a final answer, as ConverseStream streams them for Claude.
func bedrockWire(tb testing.TB) wire {
	step1 := []bedrockEvent{{"messageStart", `{"p":` + pad(35) + `,"role":"assistant"}`}}
	for _, s := range reasoningPieces {
		step1 = append(step1, bedrockDelta(0, `{"reasoningContent":{"text":`+js(s)+`}}`))
	}
	step1 = append(step1, bedrockDelta(0, `{"reasoningContent":{"signature":`+js(bedrockSignature)+`}}`), bedrockStop(0))
	for _, s := range textPieces {
		step1 = append(step1, bedrockDelta(1, `{"text":`+js(s)+`}`))
	}
	step1 = append(step1, bedrockStop(1), bedrockToolStart(2, bedrockWeatherID, "get_weather"), bedrockDelta(2, `{"toolUse":{"input":""}}`))
	for _, s := range weatherArgs {
		step1 = append(step1, bedrockDelta(2, `{"toolUse":{"input":`+js(s)+`}}`))
	}
	step1 = append(step1, bedrockStop(2), bedrockToolStart(3, bedrockEmailID, "send_email"))
	for _, s := range emailArgs {
		step1 = append(step1, bedrockDelta(3, `{"toolUse":{"input":`+js(s)+`}}`))
	}
	step1 = append(step1, bedrockStop(3),
		bedrockEvent{"messageStop", `{"p":` + pad(12) + `,"stopReason":"tool_use"}`},
		bedrockMetadata(1290, 201))

	step2 := []bedrockEvent{{"messageStart", `{"p":` + pad(35) + `,"role":"assistant"}`}}
	for _, s := range finalPieces {
		step2 = append(step2, bedrockDelta(0, `{"text":`+js(s)+`}`))
	}
	step2 = append(step2, bedrockStop(0),
		bedrockEvent{"messageStop", `{"p":` + pad(12) + `,"stopReason":"end_turn"}`},
		bedrockMetadata(1544, 18))

	return wire{
		replies:   []pt.Reply{bedrockStream(tb, step1...), bedrockStream(tb, step2...)},
		weatherID: bedrockWeatherID,
		emailID:   bedrockEmailID,
		signature: bedrockSignature,
		model: func(t testing.TB, url string) model.Model {
			client := bedrockruntime.New(bedrockruntime.Options{
				Region:       "us-east-1",
				BaseEndpoint: aws.String(url),
				Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""),
				HTTPClient:   &http.Client{Transport: plainBodyTransport{http.DefaultTransport}},
			})
			m, err := bedrock.New(client, bedrock.Config{Model: bedrockModel, ThinkingBudget: bedrockBudget})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	}
}

// plainBodyTransport hides the WriteTo method of the SDK's request body,
// which otherwise races with net/http on a server that answers at once
// (see the bedrock package's tests).
type plainBodyTransport struct{ base http.RoundTripper }

type plainBody struct{ io.ReadCloser }

func (t plainBodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r = r.Clone(r.Context())
		r.Body = plainBody{r.Body}
	}
	return t.base.RoundTrip(r)
}

// bedrockBody is a ConverseStream request.
type bedrockBody struct {
	System []struct {
		Text string `json:"text"`
	} `json:"system"`
	InferenceConfig struct {
		MaxTokens int `json:"maxTokens"`
	} `json:"inferenceConfig"`
	AdditionalModelRequestFields struct {
		Thinking struct {
			Type   string `json:"type"`
			Budget int    `json:"budget_tokens"`
		} `json:"thinking"`
	} `json:"additionalModelRequestFields"`
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
		Role    string         `json:"role"`
		Content []bedrockBlock `json:"content"`
	} `json:"messages"`
}

// bedrockBlock is a Converse content block; exactly one field is set.
type bedrockBlock struct {
	Text             *string `json:"text"`
	ReasoningContent *struct {
		ReasoningText *struct {
			Text      string `json:"text"`
			Signature string `json:"signature"`
		} `json:"reasoningText"`
	} `json:"reasoningContent"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		ToolUseID string `json:"toolUseId"`
		Status    string `json:"status"`
		Content   []struct {
			Text *string        `json:"text"`
			JSON map[string]any `json:"json"`
		} `json:"content"`
	} `json:"toolResult"`
}

func decodeBedrock(t *testing.T, rq pt.Request) bedrockBody {
	t.Helper()
	if rq.Method != http.MethodPost || rq.Path != "/model/"+bedrockModel+"/converse-stream" {
		t.Fatalf("request %s %s", rq.Method, rq.Path)
	}
	if auth := rq.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") {
		t.Fatalf("authorization = %q", auth)
	}
	var body bedrockBody
	if err := json.Unmarshal(rq.Body, &body); err != nil {
		t.Fatalf("%v: %s", err, rq.Body)
	}
	if len(body.System) != 1 || body.System[0].Text != System || body.InferenceConfig.MaxTokens != MaxTokens {
		t.Fatalf("system/inferenceConfig: %s", rq.Body)
	}
	if th := body.AdditionalModelRequestFields.Thinking; th.Type != "enabled" || th.Budget != bedrockBudget {
		t.Fatalf("thinking = %+v", th)
	}
	var names []string
	for _, tl := range body.ToolConfig.Tools {
		s := tl.ToolSpec
		names = append(names, s.Name)
		if s.Description == "" || s.InputSchema.JSON["type"] != "object" || s.InputSchema.JSON["required"] == nil {
			t.Fatalf("toolSpec %s = %+v", s.Name, s)
		}
	}
	if !slices.Equal(names, demoToolNames) {
		t.Fatalf("tools = %v, want %v", names, demoToolNames)
	}
	return body
}

// TestBedrockApprovalRoundTrip runs a turn on the Bedrock provider through a
// suspension for approval and a resumption in a fresh invocation, and
// checks that the request made after the resumption is what Converse
// expects: the assistant's reasoningContent echoed with its signature, both
// toolUse blocks with the server's ids, then one user message of toolResult
// blocks in call order, the denied one with status "error" and the denial.
func TestBedrockApprovalRoundTrip(t *testing.T) {
	decisions(t, func(t *testing.T, d reducer.Decision) {
		o := runTurn(t, bedrockWire(t), d)

		first := decodeBedrock(t, o.requests[0])
		if len(first.Messages) != 1 || first.Messages[0].Role != "user" || len(first.Messages[0].Content) != 1 ||
			first.Messages[0].Content[0].Text == nil || *first.Messages[0].Content[0].Text != UserText {
			t.Fatalf("first request messages = %s", o.requests[0].Body)
		}

		body := decodeBedrock(t, o.requests[1])
		raw := o.requests[1].Body
		ms := body.Messages
		if len(ms) != 3 || ms[0].Role != "user" || ms[1].Role != "assistant" || ms[2].Role != "user" {
			t.Fatalf("messages after the resume: %s", raw)
		}
		if c := ms[0].Content; len(c) != 1 || c[0].Text == nil || *c[0].Text != UserText {
			t.Fatalf("user message: %s", raw)
		}

		asst := ms[1].Content
		if len(asst) != 4 {
			t.Fatalf("assistant content: %s", raw)
		}
		if r := asst[0].ReasoningContent; r == nil || r.ReasoningText == nil || r.ReasoningText.Text != joined(reasoningPieces) || r.ReasoningText.Signature != bedrockSignature {
			t.Fatalf("reasoningContent block: %s", raw)
		}
		if x := asst[1].Text; x == nil || *x != joined(textPieces) {
			t.Fatalf("text block: %s", raw)
		}
		if u := asst[2].ToolUse; u == nil || u.ToolUseID != bedrockWeatherID || u.Name != "get_weather" || !sameJSON(t, u.Input, joined(weatherArgs)) {
			t.Fatalf("first toolUse: %s", raw)
		}
		if u := asst[3].ToolUse; u == nil || u.ToolUseID != bedrockEmailID || u.Name != "send_email" || !sameJSON(t, u.Input, joined(emailArgs)) {
			t.Fatalf("second toolUse: %s", raw)
		}

		res := ms[2].Content
		if len(res) != len(o.results) {
			t.Fatalf("tool results: %s", raw)
		}
		for i, want := range o.results {
			r := res[i].ToolResult
			if r == nil || r.ToolUseID != want.id {
				t.Fatalf("result %d: want toolResult for %s: %s", i, want.id, raw)
			}
			if len(r.Content) != 1 || r.Content[0].Text == nil || *r.Content[0].Text != want.text {
				t.Fatalf("result %d content = %+v, want text %q", i, r.Content, want.text)
			}
			if status := map[bool]string{true: "error"}[want.error]; r.Status != status && !(status == "" && r.Status == "success") {
				t.Fatalf("result %d status = %q, want %q", i, r.Status, status)
			}
		}
	})
}
