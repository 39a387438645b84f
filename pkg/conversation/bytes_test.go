package conversation_test

import (
	"encoding/json"
	"testing"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
)

// roundTrip is parts as a fresh invocation reads them back from a stream.
func roundTrip(t *testing.T, ps []parts.Part) []parts.Part {
	t.Helper()
	b, err := json.Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	var out []parts.Part
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLiveAndStoredPartsBuildTheSameInput checks that the model input a
// Replayer builds from parts as they are written (a tool's spaced output,
// a model's spaced input) is byte for byte the one built from the same
// parts read back from storage, for tool results of every JSON kind.
func TestLiveAndStoredPartsBuildTheSameInput(t *testing.T) {
	for _, out := range []string{
		`{"slept": 0.1}`,
		`{ "html" : "<b>&amp;</b>", "sep": "` + "\u2028" + `", "n": 123456789012345678901234567890 }`,
		"[1,\n 2.50000000000000000001 ,\t\"☕\"]",
		`"plain"`, `  42 `, `null`, `true`,
	} {
		ps := stepWithCall("A", "c1")
		ps[9].Input = json.RawMessage(`{"city": "Oslo", "when" : "<now>"}`)
		ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "c1", Output: json.RawMessage(out)})
		var live conversation.Replayer
		live.Add(ps...)
		got := raw(live.Build(nil, nil))
		want := raw(conversation.Build(nil, nil, conversation.Replay(roundTrip(t, ps))))
		if got != want {
			t.Errorf("output %q: live input and result\n%s\nare not the stored ones\n%s", out, got, want)
		}
	}
}

// raw lists the tool inputs and outputs of msgs, byte for byte (a
// json.Marshal of the messages would compact them and hide a difference).
func raw(msgs []conversation.Message) string {
	var b []byte
	for _, m := range msgs {
		for _, c := range m.Content {
			b = append(b, c.Input...)
			b = append(b, " -> "...)
			b = append(b, c.Output...)
			b = append(b, '\n')
		}
	}
	return string(b)
}

// TestToolErrorTextIsFoldedAsItReadsBack checks that a tool error whose
// text is not valid UTF-8 reaches the model live as it does read back.
func TestToolErrorTextIsFoldedAsItReadsBack(t *testing.T) {
	ps := append(stepWithCall("A", "c1"), parts.Part{Type: parts.ToolOutputError, ToolCallID: "c1", ErrorText: "bad \xff byte <&>"})
	var live conversation.Replayer
	live.Add(ps...)
	got := raw(live.Build(nil, nil))
	if want := raw(conversation.Build(nil, nil, conversation.Replay(roundTrip(t, ps)))); got != want {
		t.Fatalf("live input\n%s\nis not the stored one\n%s", got, want)
	}
}
