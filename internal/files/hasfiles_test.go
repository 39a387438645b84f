package files

import (
	"encoding/json"
	"testing"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestHasFiles: a tool output as StoreToolOutput records it, and a file
// block, have files to load; an output without files has none, even one
// that names the key in its text.
func TestHasFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	out, err := ToolOutput(map[string]string{"chart": "done"}, ToolFile{MediaType: "image/png", Name: "c.png", Data: pngBytes})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := f.store.StoreToolOutput(t.Context(), "s1", Policy{}, out)
	if err != nil {
		t.Fatal(err)
	}
	result := func(out json.RawMessage) []conversation.Message {
		return []conversation.Message{{Role: conversation.User, Content: []conversation.Content{{Type: conversation.Text, Text: "hi"}}},
			{Role: conversation.ToolRole, Content: []conversation.Content{{Type: conversation.ToolResult, Output: out}}}}
	}
	for name, c := range map[string]struct {
		msgs []conversation.Message
		want bool
	}{
		"recorded tool files": {result(rec), true},
		"a file block":        {[]conversation.Message{{Role: conversation.User, Content: []conversation.Content{{Type: conversation.File, File: &reducer.File{SHA256: "x"}}}}}, true},
		"plain output":        {result(json.RawMessage(`{"temp":21}`)), false},
		"the key in a string": {result(json.RawMessage(`{"note":"\"baton.files\": is a key"}`)), false},
	} {
		if got := HasFiles(c.msgs); got != c.want {
			t.Errorf("%s: HasFiles = %v, want %v", name, got, c.want)
		}
	}
	if _, refs, ok := ToolFiles(rec); !ok || len(refs) != 1 {
		t.Fatalf("the recorded output's files: %v %v", refs, ok)
	}
}
