package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
)

// Data is a part a running tool sends to its turn's stream: progress, or
// a data type of the tool's own. It reaches readers as a "data-<Type>"
// part; the AI SDK's useChat shows it in message.parts (and onData), and a
// later part of the same Type and ID replaces an earlier one there. The
// model never sees it.
type Data struct {
	// Type names the part after "data-": lowercase letters, digits and
	// single dashes, at most 40 characters, and none of baton's own.
	Type string
	// ID, when set, names the part, so that a later one updates it.
	ID string
	// Data is the payload; it must encode to JSON of at most MaxData bytes.
	Data any
	// Transient parts are for live readers only: the chat's history
	// leaves them out, and useChat passes them to onData alone.
	Transient bool
}

// MaxData is the largest encoded payload of one Data part.
const MaxData = 16 << 10

// Errors of Emit.
var (
	// ErrNoStream: Emit outside a running tool call.
	ErrNoStream = errors.New("tool: emit outside a running tool call")
	// ErrBadData: a Data part whose type, id or payload is not allowed.
	ErrBadData = errors.New("tool: bad data part")
)

// Reserved are the data types baton's own parts use.
var reserved = []string{"suspended", "resumed", "abandoned", "compacted", "steered", "edited", "redone", "tools", "callback"}

var dataType = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Emitter sends a checked part of the call running in a context to its
// turn's stream (WithEmitter).
type Emitter func(d Data, payload json.RawMessage) error

type emitterKey struct{}

// WithEmitter returns ctx carrying e, for the tool call that runs in it.
func WithEmitter(ctx context.Context, e Emitter) context.Context {
	return context.WithValue(ctx, emitterKey{}, e)
}

// Emit checks d and sends it to the stream of the tool call running in
// ctx. It fails with ErrNoStream outside one and with ErrBadData for a
// part it refuses; either sends nothing.
func Emit(ctx context.Context, d Data) error {
	e, ok := ctx.Value(emitterKey{}).(Emitter)
	if !ok || e == nil {
		return ErrNoStream
	}
	payload, err := d.check()
	if err != nil {
		return err
	}
	return e(d, payload)
}

// check returns d's encoded payload, or why d is refused.
func (d Data) check() (json.RawMessage, error) {
	switch {
	case len(d.Type) == 0 || len(d.Type) > 40 || !dataType.MatchString(d.Type):
		return nil, fmt.Errorf("%w: type %q: want lowercase letters, digits and single dashes, at most 40", ErrBadData, d.Type)
	case slices.Contains(reserved, d.Type):
		return nil, fmt.Errorf("%w: type %q is baton's own", ErrBadData, d.Type)
	case len(d.ID) > 200:
		return nil, fmt.Errorf("%w: an id of %d bytes; at most 200", ErrBadData, len(d.ID))
	}
	b, err := json.Marshal(d.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: type %q: %v", ErrBadData, d.Type, err)
	}
	if len(b) > MaxData {
		return nil, fmt.Errorf("%w: type %q: a payload of %d bytes; at most %d", ErrBadData, d.Type, len(b), MaxData)
	}
	return b, nil
}
