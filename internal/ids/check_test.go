package ids_test

import (
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/ids"
)

// TestCheck is the one session-id rule: the operator API, the stream store
// and wakes all refuse what it refuses.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		id string
		ok bool
	}{
		{"s_01", true}, {"chat_ab12", true}, {strings.Repeat("x", ids.MaxLen), true}, {"é", true},
		{"", false}, {".", false}, {"..", false}, {strings.Repeat("x", ids.MaxLen+1), false},
		{"a/b", false}, {"a\nb", false}, {"a\x7fb", false}, {"\xff", false},
	} {
		if err := ids.Check(c.id); (err == nil) != c.ok {
			t.Errorf("Check(%q) = %v, want ok %v", c.id, err, c.ok)
		}
	}
}
