package parts_test

import (
	"encoding/json"
	"testing"

	"github.com/baton-run/baton/internal/parts"
)

// TestRecordedIsWhatAStoredPartReadsBack checks that Recorded gives the
// bytes a part's output has after a write and a read, for values whose
// spelling a store changes, and that it is idempotent.
func TestRecordedIsWhatAStoredPartReadsBack(t *testing.T) {
	for _, v := range []string{
		`{"slept": 0.1}`,
		"{\n  \"a\" : [1, 2,\t3]\n}",
		`{"html":"<b>&</b>","sep":"` + "\u2028" + `"}`,
		`{"big": 123456789012345678901234567890, "exp": 1E400}`,
		`"caf\u00e9 ☕"`,
		` [ null , true ] `,
		`null`,
		`12.50`,
		`{"a":[1,2],"b":"\u00e9"}`,
		`"x` + "\u2028" + `"`,
		`"a<b"`,
		`"☕"`,
	} {
		b, err := json.Marshal(parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "tc", Output: json.RawMessage(v)})
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		var back parts.Part
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		got := parts.Recorded(json.RawMessage(v))
		if string(got) != string(back.Output) {
			t.Errorf("Recorded(%q) = %q, a stored part reads back %q", v, got, back.Output)
		}
		if again := parts.Recorded(got); string(again) != string(got) {
			t.Errorf("Recorded(%q) = %q, not idempotent", got, again)
		}
	}
}
