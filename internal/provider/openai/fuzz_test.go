package openai

import (
	"testing"

	pt "github.com/baton-run/baton/internal/provider/providertest"
)

// FuzzStream serves fuzzed bytes as the body of a chat completions stream
// and drains the step: the SDK's SSE decoder and the adapter's fold of its
// chunks must end in a valid event sequence or a classified error, and
// never panic.
func FuzzStream(f *testing.F) {
	for _, step := range [][]string{textStep, toolStep, twoToolStep, reasoningStep} {
		pairs := make([]string, 0, 2*len(step))
		for _, d := range step {
			pairs = append(pairs, "", d)
		}
		f.Add(pt.SSE(pairs...))
		f.Add(pt.SSE(pairs[:len(pairs)/2]...))
	}
	f.Add([]byte("data: " + chunk(`{"tool_calls":[{"index":-1,"function":{"name":"x","arguments":"[1]"}}]}`, "tool_calls") + "\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: " + chunk(`{}`, "stop") + "\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":-5}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n"))
	f.Add([]byte("data: not json\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := New(Config{Model: "gpt-4o", MaxTokens: 1024, APIKey: "sk-test", BaseURL: "http://openai.invalid/v1",
			HTTPClient: pt.BodyClient(sseHeader, body)})
		if err != nil {
			t.Fatal(err)
		}
		events, err := pt.Collect(m.Stream(t.Context(), req()))
		pt.CheckStep(t, events, err)
	})
}
