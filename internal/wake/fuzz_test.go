package wake

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds arbitrary SQS message bodies to Parse. A body is either
// refused with a *ParseError matching ErrInvalid, or gives a wake whose
// session could name a stored session and which survives a round trip
// through the encoding Wake sends.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"session":"s_019a2b3c4d5e6f0123456789abcdef","reason":"budget","seq":12}`,
		`{"session":"s_1","reason":"lease","seq":7,"extra":true}`,
		`{"session":"s_1","reason":"message"}`,
		`{"session":"s_1","seq":-1}`,
		`{"session":"s_1"}{"session":"s_2"}`,
		`{"session":"s_1"} x`,
		`{"session":"  "}`,
		`{"session":"a\u0000b"}`,
		`{"session":"s/../t"}`,
		`{"session":"` + strings.Repeat("x", 300) + `"}`,
		`{"seq":9223372036854775808,"session":"s"}`,
		`null`, `[]`, `"s_1"`, ``, `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		w, err := Parse(body)
		if err != nil {
			var pe *ParseError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &pe) || pe.Reason == "" {
				t.Fatalf("Parse(%q): %v is not a *ParseError with a reason", body, err)
			}
			if w != (Wake{}) {
				t.Fatalf("Parse(%q) returned %+v with its error", body, w)
			}
			return
		}
		if err := checkSession(w.Session); err != nil {
			t.Fatalf("Parse(%q) accepted session %q: %v", body, w.Session, err)
		}
		if w.Seq < 0 {
			t.Fatalf("Parse(%q) accepted seq %d", body, w.Seq)
		}
		enc, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(string(enc))
		if err != nil || again != w {
			t.Fatalf("round trip of %+v: %+v, %v", w, again, err)
		}
	})
}

// checkSession is the test's own idea of a session id a wake may name.
func checkSession(s string) error {
	if strings.TrimSpace(s) == "" || len(s) > MaxSession || !utf8.ValidString(s) {
		return errors.New("blank, too long or not UTF-8")
	}
	if s == "." || s == ".." {
		return errors.New("a dot path segment")
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f || c == '/' {
			return errors.New("control character or slash")
		}
	}
	return nil
}
