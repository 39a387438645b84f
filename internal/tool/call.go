package tool

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Approved is the operator's approval of a call: its id, who approved it
// (the operator's identity) and the reason they gave, if any.
type Approved struct {
	ID       string
	Approver string
	Reason   string
}

type callKey struct{}

// WithCall returns ctx carrying c, for the tool that runs it (CallFrom).
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call a tool's context carries, and whether it
// carries one. The runner gives every tool's Run such a context.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

// ErrorKind says what a tool's error means for the turn.
type ErrorKind int

// Error kinds. An error that is not an *Error is ForModel's.
const (
	// ForModel: the error is the call's result; the model sees it and the
	// turn goes on.
	ForModel ErrorKind = iota
	// Transient: the call failed before it took effect and may succeed if
	// run again; the runner retries it by the tool's Retry policy, then
	// tells the model.
	Transient
	// Fatal: the turn cannot go on; it fails (turn.failed, kind tool) with
	// the error's message.
	Fatal
)

func (k ErrorKind) String() string {
	switch k {
	case Transient:
		return "transient"
	case Fatal:
		return "fatal"
	}
	return "for-model"
}

// Error is a tool's error of a kind.
type Error struct {
	Kind ErrorKind
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Kind.String() + " tool error"
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of a tool's error: that of the first *Error in
// its chain, or ForModel.
func KindOf(err error) ErrorKind {
	var te *Error
	if errors.As(err, &te) {
		return te.Kind
	}
	return ForModel
}

// Retry is a tool's policy for transient errors: the tries in all (the
// first included) and the backoff between them, doubling from Backoff up
// to MaxBackoff. Attempts of 0 or 1 never retry.
type Retry struct {
	Attempts            int
	Backoff, MaxBackoff time.Duration
}

// wait is the pause before try n+1 (n from 1).
func (r Retry) wait(n int) time.Duration {
	d := r.Backoff
	for i := 1; i < n && d > 0 && (r.MaxBackoff <= 0 || d < r.MaxBackoff); i++ {
		d *= 2
	}
	if r.MaxBackoff > 0 && d > r.MaxBackoff {
		d = r.MaxBackoff
	}
	return max(d, 0)
}

// Invoke runs one call of t under its policy, with ctx bounded by the
// step's deadline. Each try runs under the tool's Timeout, if it has one,
// never past ctx's deadline, with the call (its Try set) in its context
// (WithCall). A Transient error is tried again by the tool's Retry while
// the pause fits before ctx's deadline; when the tries run out, the last
// error is returned as ForModel, saying so. A try cut by the tool's own
// Timeout, with an error the tool did not mark Transient or Fatal, is
// ForModel too: the model is told the call timed out and, for a side
// effect, that its outcome is unknown. When ctx itself ends the error is
// ctx's, and the call has no result. Any other error is returned
// as the tool gave it: see KindOf.
func Invoke(ctx context.Context, t Tool, c Call) ([]byte, error) {
	for try := 1; ; try++ {
		c.Try = try
		out, err, timedOut := t.try(ctx, c)
		switch {
		case err == nil:
			return out, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case timedOut && KindOf(err) == ForModel:
			msg := fmt.Sprintf("the call timed out after %s", t.Timeout)
			if t.SideEffect() {
				msg += "; whether it took effect is unknown"
			}
			return nil, &Error{Kind: ForModel, Err: fmt.Errorf("%s: %w", msg, err)}
		case KindOf(err) != Transient:
			return nil, err
		}
		if try >= t.Retry.Attempts || !pause(ctx, t.Retry.wait(try)) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &Error{Kind: ForModel, Err: fmt.Errorf("failed with a transient error after %d %s: %w", try, plural(try, "try", "tries"), err)}
		}
	}
}

// try runs one try under the tool's timeout, and says whether that
// timeout (not ctx) cut it.
func (t Tool) try(ctx context.Context, c Call) ([]byte, error, bool) {
	tctx, cancel := ctx, context.CancelFunc(func() {})
	if t.Timeout > 0 {
		tctx, cancel = context.WithTimeout(ctx, t.Timeout)
	}
	defer cancel()
	out, err := t.Run(WithCall(tctx, c), c)
	return out, err, err != nil && tctx.Err() != nil && ctx.Err() == nil
}

// pause waits d, unless ctx's deadline comes first (then it does not wait
// at all) or ctx ends; it reports whether it waited the whole of d.
func pause(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Now().Add(d).After(dl) {
		return false
	}
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
