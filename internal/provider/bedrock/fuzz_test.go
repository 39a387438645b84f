package bedrock

import (
	"bytes"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	pt "github.com/baton-run/baton/internal/provider/providertest"
)

// FuzzStream serves fuzzed bytes as the body of a ConverseStream response
// and drains the step: the SDK's event-stream frame decoder and the
// adapter's fold of its events must end in a valid event sequence or a
// classified error, and never panic.
func FuzzStream(f *testing.F) {
	for _, step := range [][]ev{textStep, toolStep, twoToolStep, reasoningStep} {
		body := bytes.Join(stream(f, step...).Chunks, nil)
		f.Add(body)
		f.Add(body[:len(body)/2])
	}
	f.Add(bytes.Join(stream(f, textStep[0], exc("throttlingException", `{"message":"slow down"}`)).Chunks, nil))
	f.Add(bytes.Join(stream(f, ev{"contentBlockDelta", `{"contentBlockIndex":3,"delta":{"toolUse":{"input":"{"}}}`}).Chunks, nil))
	f.Add(bytes.Join(stream(f, ev{"contentBlockStart", `{"contentBlockIndex":0,"start":{"toolUse":{"name":"x","toolUseId":"t"}}}`},
		ev{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"7"}}}`},
		ev{"contentBlockStop", `{"contentBlockIndex":0}`}, ev{"messageStop", `{"stopReason":"tool_use"}`},
		ev{"metadata", `{"usage":{"inputTokens":-3,"outputTokens":1}}`}).Chunks, nil))
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		client := bedrockruntime.New(bedrockruntime.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String("http://bedrock.invalid"),
			Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""),
			HTTPClient:   pt.BodyClient(streamHeader, body),
		})
		m, err := New(client, Config{Model: modelID, MaxTokens: 1024})
		if err != nil {
			t.Fatal(err)
		}
		events, err := pt.Collect(m.Stream(t.Context(), req()))
		pt.CheckStep(t, events, err)
	})
}
