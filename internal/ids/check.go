package ids

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxLen is the longest usable id, in bytes.
const MaxLen = 256

// Check is the one rule for a usable id (a session's, a turn's or a
// stream's): 1 to MaxLen bytes of UTF-8, not "." or "..", with no control
// character and no slash, so that it names exactly one key prefix in S3 and
// one path segment. It says what is wrong.
func Check(id string) error {
	switch {
	case id == "":
		return errors.New("empty id")
	case id == "." || id == "..":
		return fmt.Errorf("id %q", id)
	case len(id) > MaxLen:
		return fmt.Errorf("id of %d bytes, longer than %d", len(id), MaxLen)
	case !utf8.ValidString(id):
		return errors.New("id is not UTF-8")
	}
	if i := strings.IndexFunc(id, func(c rune) bool { return c < 0x20 || c == 0x7f || c == '/' }); i >= 0 {
		return fmt.Errorf("id %q holds a control character or a slash", id)
	}
	return nil
}
