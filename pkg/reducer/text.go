package reducer

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxText is the longest message text accepted, in bytes of UTF-8: a
// message posted to a session or a chat, a schedule's text, a child's task.
// It keeps a fact that carries one well within DynamoDB's 400 KB item.
const MaxText = 100 << 10

// ErrBadText: a message text that is blank, longer than MaxText, or not
// UTF-8. Nothing was written. Errors.As gives the *TextError that says
// which.
var ErrBadText = errors.New("bad message text")

// TextError is a message text CheckText refuses.
type TextError struct {
	// Field is what the text is, as the caller names it: "text",
	// "task", "the last message's text".
	Field string
	// Bytes is the text's length.
	Bytes int
	// Problem says what is wrong, after Field: "is blank", "is 150000
	// bytes, longer than the 102400 allowed", "is not valid UTF-8".
	Problem string
}

func (e *TextError) Error() string { return e.Field + " " + e.Problem }

// Is makes a TextError match ErrBadText.
func (e *TextError) Is(target error) bool { return target == ErrBadText }

// CheckText is the one check of a message's text, wherever it comes from
// (a message posted, a chat's, a schedule's, a child's task, the CLI, the
// Go API): the text must be valid UTF-8, hold something besides white
// space, and be at most MaxText bytes. field names the text in the error,
// a *TextError.
func CheckText(field, text string) error {
	bad := func(format string, args ...any) error {
		return &TextError{Field: field, Bytes: len(text), Problem: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(text) > MaxText:
		return bad("is %d bytes, longer than the %d allowed", len(text), MaxText)
	case !utf8.ValidString(text):
		return bad("is not valid UTF-8")
	case strings.TrimSpace(text) == "":
		return bad("is required and must not be blank")
	}
	return nil
}

// CheckMessage checks a message's text as CheckText does, but a message
// that carries files may have no text.
func CheckMessage(field string, m Message) error {
	if len(m.Files) > 0 && m.Text == "" {
		return nil
	}
	return CheckText(field, m.Text)
}
