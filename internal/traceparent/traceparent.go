// Package traceparent is baton's own few lines of W3C Trace Context
// (https://www.w3.org/TR/trace-context/): the traceparent header's format,
// a fresh trace context for a new turn, and a context value to carry one
// from a request, or a wake, to the turn it starts. It links no tracing
// SDK, so the operator and the tick record a turn's trace without one;
// the resume function's tracer (package providers/otel) reads what they
// recorded.
package traceparent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// Header is the HTTP header (and SQS message field) that carries a trace
// context.
const Header = "traceparent"

// Parent is a parsed traceparent: the trace, the parent span in it, and
// the trace flags (bit 0: sampled).
type Parent struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// Sampled reports whether the caller recorded its span (the sampled flag).
func (p Parent) Sampled() bool { return p.Flags&1 == 1 }

// String is p in the traceparent format, version 00.
func (p Parent) String() string {
	return fmt.Sprintf("00-%s-%s-%02x", hex.EncodeToString(p.TraceID[:]), hex.EncodeToString(p.SpanID[:]), p.Flags)
}

// ErrInvalid is matched by every error of Parse.
var ErrInvalid = errors.New("traceparent: invalid")

// Parse reads a traceparent header value: version 00 as the spec writes
// it (lower-case hex, a trace id and a span id that are not all zero).
// A later version is read by its first four fields, as the spec asks.
func Parse(s string) (Parent, error) {
	var p Parent
	if len(s) < 55 || (len(s) > 55 && (s[:2] == "00" || s[55] != '-')) {
		return p, fmt.Errorf("%w: %q is not version-traceid-spanid-flags", ErrInvalid, s)
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" || !lowerHex(s[:2]) {
		return p, fmt.Errorf("%w: %q is not version-traceid-spanid-flags", ErrInvalid, s)
	}
	var flags [1]byte
	if !decode(p.TraceID[:], s[3:35]) || !decode(p.SpanID[:], s[36:52]) || !decode(flags[:], s[53:55]) {
		return p, fmt.Errorf("%w: %q is not lower-case hex", ErrInvalid, s)
	}
	if p.TraceID == ([16]byte{}) || p.SpanID == ([8]byte{}) {
		return p, fmt.Errorf("%w: %q has an all-zero id", ErrInvalid, s)
	}
	p.Flags = flags[0]
	return p, nil
}

// Valid reports whether s parses.
func Valid(s string) bool {
	_, err := Parse(s)
	return err == nil
}

func decode(dst []byte, s string) bool {
	if !lowerHex(s) {
		return false
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// New is a fresh, sampled trace context: a random trace id and parent span
// id, for a turn that no traced request started.
func New() string {
	var p Parent
	for p.TraceID == ([16]byte{}) || p.SpanID == ([8]byte{}) {
		// crypto/rand.Read never fails (Go 1.24 and later).
		_, _ = rand.Read(p.TraceID[:])
		_, _ = rand.Read(p.SpanID[:])
	}
	p.Flags = 1
	return p.String()
}

type key struct{}

// With returns ctx carrying the traceparent tp; an invalid tp is dropped,
// so what From returns always parses.
func With(ctx context.Context, tp string) context.Context {
	if !Valid(tp) {
		return ctx
	}
	return context.WithValue(ctx, key{}, tp)
}

// From returns the traceparent ctx carries, "" for none.
func From(ctx context.Context) string {
	tp, _ := ctx.Value(key{}).(string)
	return tp
}
