package anthropic

import (
	"testing"

	pt "github.com/baton-run/baton/internal/provider/providertest"
)

// FuzzStream serves fuzzed bytes as the body of a Messages API stream and
// drains the step: the SDK's SSE decoder and the adapter's fold of its
// events must end in a valid event sequence or a classified error, and
// never panic.
func FuzzStream(f *testing.F) {
	for _, step := range [][]string{textStep, toolStep, twoToolStep, thinkingStep, midStreamError} {
		f.Add(pt.SSE(step...))
		f.Add(pt.SSE(step[:len(step)/2]...))
	}
	f.Add([]byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n"))
	f.Add([]byte(": comment\nretry: 10\nid: 1\ndata: {\ndata: }\n\n"))
	f.Add([]byte("event: message_start\ndata: not json\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := New(Config{Model: "claude-sonnet-4-5", MaxTokens: 1024, APIKey: "sk-ant-test",
			BaseURL: "http://anthropic.invalid", HTTPClient: pt.BodyClient(sseHeader, body)})
		if err != nil {
			t.Fatal(err)
		}
		events, err := pt.Collect(m.Stream(t.Context(), req()))
		pt.CheckStep(t, events, err)
	})
}
