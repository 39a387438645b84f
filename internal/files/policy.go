package files

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/baton-run/baton/internal/files/spec"
)

// The policy's defaults and its type (package spec, which the authoring
// package names without this one's runtime).
const (
	DefaultMaxBytes = spec.DefaultMaxBytes
	DefaultMaxFiles = spec.DefaultMaxFiles
	// MaxInline is the largest file a request may carry inline (a data
	// URL, a fetched URL); larger files go through a presigned upload,
	// as a request body is at most 1 MiB anyway.
	MaxInline = 20 << 20
)

// DefaultTypes are the media types an agent accepts unless it says
// otherwise.
var DefaultTypes = spec.DefaultTypes

// Policy is what an agent accepts in a message's files (spec.Policy).
type Policy = spec.Policy

// Reason says why a file was refused.
type Reason string

// Reasons.
const (
	WrongType Reason = "type"     // a media type the agent does not accept
	TooBig    Reason = "size"     // larger than the agent's largest
	TooMany   Reason = "count"    // more files than a message may carry
	Lies      Reason = "lies"     // the bytes are not of the type declared
	Private   Reason = "private"  // a URL to a private address
	BadFile   Reason = "bad"      // malformed: a bad data URL, a URL not https, an unknown upload
	NoFetch   Reason = "no-fetch" // a URL, and the agent does not fetch them
)

// ErrRefused is matched (errors.Is) by every *Error.
var ErrRefused = errors.New("file refused")

// Error is a file refused; nothing was written.
type Error struct {
	Reason Reason
	// File names the file: its name, or its place in the message.
	File string
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("file %s: %s", e.File, e.Msg) }

// Is makes an Error match ErrRefused.
func (e *Error) Is(target error) bool { return target == ErrRefused }

// Status is the HTTP status of a refusal: 413 too big, 415 a type not
// accepted or a lying file, 400 the rest.
func (e *Error) Status() int {
	switch e.Reason {
	case TooBig:
		return http.StatusRequestEntityTooLarge
	case WrongType, Lies:
		return http.StatusUnsupportedMediaType
	}
	return http.StatusBadRequest
}

func refuse(r Reason, file, format string, args ...any) *Error {
	return &Error{Reason: r, File: file, Msg: fmt.Sprintf(format, args...)}
}

// checkDeclared checks a file's declared media type and size against p.
func checkDeclared(p Policy, name, mt string, size int64) error {
	p = p.Resolved()
	if !p.Accepts(mt) {
		return refuse(WrongType, name, "media type %q is not accepted: the agent accepts %s", mt, strings.Join(p.Types, ", "))
	}
	if size > p.MaxBytes {
		return refuse(TooBig, name, "is %d bytes, larger than the %d the agent accepts", size, p.MaxBytes)
	}
	if size <= 0 {
		return refuse(BadFile, name, "is empty")
	}
	return nil
}

// checkCount refuses more files than a message may carry.
func checkCount(p Policy, n int) error {
	p = p.Resolved()
	max := max(p.MaxFiles, 0)
	if n > max {
		return refuse(TooMany, fmt.Sprintf("%d", max+1), "a message may carry %d files; this one has %d", max, n)
	}
	return nil
}

// sniff checks that head, a file's first bytes, are of media type mt:
// images and PDF by their magic numbers (net/http.DetectContentType), text
// as text; a type the sniffer does not know must not sniff as one it does.
func sniff(name, mt string, head []byte) error {
	got, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	switch {
	case got == mt:
		return nil
	case strings.HasPrefix(mt, "text/") && got == "text/plain":
		return nil
	case (strings.HasPrefix(mt, "image/") || mt == "application/pdf") && got != mt:
		return refuse(Lies, name, "is declared %s but its bytes are %s", mt, got)
	case got != "application/octet-stream" && got != "text/plain":
		return refuse(Lies, name, "is declared %s but its bytes are %s", mt, got)
	}
	return nil
}
