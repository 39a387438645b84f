package operator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/operator"
)

// asciiJSON encodes s as a JSON string with every character outside
// printable ASCII escaped as \uXXXX, as Python's json.dumps does by
// default: the longest a client's encoding of a text gets.
func asciiJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r >= 0x20 && r < 0x7f && r != '"' && r != '\\':
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestTheTextLimitIsReachable posts messages of exactly MaxText bytes under
// the default body limit, in plain and in the most escaped JSON a client
// sends (control characters, each 6 bytes as \u00XX; emoji as surrogate
// pairs): each is accepted. One byte more is refused with 400 and a message
// naming the limit, and writes nothing.
func TestTheTextLimitIsReachable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	path := "/sessions/" + s.ID + "/messages"
	for _, c := range []struct{ name, body string }{
		{"plain", `{"text":"` + strings.Repeat("x", operator.MaxText) + `"}`},
		{"control characters", `{"text":` + asciiJSON("x"+strings.Repeat("\x01", operator.MaxText-1)) + `}`},
		{"emoji", `{"text":` + asciiJSON(strings.Repeat("😀", operator.MaxText/4)) + `}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got api.MessageAccepted
			e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice, body: c.body}).json(t, &got)
			fs := e.facts(s.ID)
			f := fs[len(fs)-1]
			if f.Message == nil || f.Message.ID != got.MessageID || len(f.Message.Text) != operator.MaxText {
				t.Fatalf("last fact %+v, want message %s of %d bytes", f, got.MessageID, operator.MaxText)
			}
		})
	}
	before, _ := json.Marshal(e.facts(s.ID))
	over := e.must(http.StatusBadRequest, req{method: "POST", path: path, user: alice,
		body: `{"text":"` + strings.Repeat("x", operator.MaxText+1) + `"}`})
	if msg := over.errorMessage(t); !strings.Contains(msg, fmt.Sprintf("longer than the %d allowed", operator.MaxText)) {
		t.Fatalf("over the limit: %q, want it to name the limit", msg)
	}
	if after, _ := json.Marshal(e.facts(s.ID)); string(after) != string(before) {
		t.Fatal("a refused message changed the facts")
	}
}
