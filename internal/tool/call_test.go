package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func runs(errs ...error) (*[]Call, func(context.Context, Call) (json.RawMessage, error)) {
	var seen []Call
	return &seen, func(ctx context.Context, c Call) (json.RawMessage, error) {
		in, _ := CallFrom(ctx)
		seen = append(seen, in)
		if i := len(seen) - 1; i < len(errs) && errs[i] != nil {
			return nil, errs[i]
		}
		return json.RawMessage(`"ok"`), nil
	}
}

func TestInvokeOutcomes(t *testing.T) {
	busy := &Error{Kind: Transient, Err: errors.New("busy")}
	for _, tc := range []struct {
		name  string
		retry Retry
		errs  []error
		tries int
		kind  ErrorKind
		want  string // "" for success
	}{
		{"plain error is the model's", Retry{Attempts: 3}, []error{errors.New("nope")}, 1, ForModel, "nope"},
		{"fatal", Retry{Attempts: 3}, []error{&Error{Kind: Fatal, Err: errors.New("gone")}}, 1, Fatal, "gone"},
		{"transient then success", Retry{Attempts: 3}, []error{busy, busy}, 3, ForModel, ""},
		{"transient exhausts", Retry{Attempts: 2}, []error{busy, busy, busy}, 2, ForModel, "after 2 tries: busy"},
		{"transient without a policy", Retry{}, []error{busy}, 1, ForModel, "after 1 try: busy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen, run := runs(tc.errs...)
			out, err := Invoke(context.Background(), Tool{Name: "t", Run: run, Retry: tc.retry}, Call{ID: "c", IdempotencyKey: "k"})
			if len(*seen) != tc.tries {
				t.Errorf("tries %d, want %d", len(*seen), tc.tries)
			}
			for i, c := range *seen {
				if c.Try != i+1 || c.IdempotencyKey != "k" || c.ID != "c" {
					t.Errorf("try %d saw %+v", i+1, c)
				}
			}
			if tc.want == "" {
				if err != nil || string(out) != `"ok"` {
					t.Fatalf("out %s err %v", out, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || KindOf(err) != tc.kind {
				t.Fatalf("err %v (kind %v), want %q of kind %v", err, KindOf(err), tc.want, tc.kind)
			}
		})
	}
}

// A retry's pause that would pass the step's deadline is not taken: the
// model is told at once.
func TestInvokeRetryKeepsToTheDeadline(t *testing.T) {
	seen, run := runs(&Error{Kind: Transient, Err: errors.New("busy")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := Invoke(ctx, Tool{Run: run, Retry: Retry{Attempts: 5, Backoff: 2 * time.Hour}}, Call{})
	if len(*seen) != 1 || KindOf(err) != ForModel || !strings.Contains(err.Error(), "after 1 try") {
		t.Fatalf("tries %d, err %v", len(*seen), err)
	}
}

// The tool's timeout is the model's error; the step's deadline is ctx's.
func TestInvokeTimeout(t *testing.T) {
	block := func(ctx context.Context, _ Call) (json.RawMessage, error) { <-ctx.Done(); return nil, ctx.Err() }
	_, err := Invoke(context.Background(), Tool{Run: block, Timeout: time.Millisecond, Effect: Write}, Call{})
	if KindOf(err) != ForModel || !strings.Contains(err.Error(), "timed out after 1ms; whether it took effect is unknown") {
		t.Fatalf("err %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err = Invoke(ctx, Tool{Run: block, Timeout: time.Hour}, Call{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past the step's deadline: %v, want ctx's error", err)
	}
}

// A When predicate asks when it says so, errs or panics; it has no JSON form.
func TestWhenRuleFailsClosed(t *testing.T) {
	in := json.RawMessage(`{"n":5}`)
	for _, tc := range []struct {
		name string
		when func(json.RawMessage) (bool, error)
		ask  bool
	}{
		{"no", func(json.RawMessage) (bool, error) { return false, nil }, false},
		{"yes", func(json.RawMessage) (bool, error) { return true, nil }, true},
		{"error", func(json.RawMessage) (bool, error) { return false, errors.New("cannot tell") }, true},
		{"panic", func(json.RawMessage) (bool, error) { panic("broken") }, true},
	} {
		r := Rule{When: tc.when}
		if err := r.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := r.Needs(in); got != tc.ask {
			t.Errorf("%s: Needs = %v, want %v", tc.name, got, tc.ask)
		}
	}
	if err := (Rule{Never: true, When: func(json.RawMessage) (bool, error) { return false, nil }}).Validate(); err == nil {
		t.Error("never with a predicate validated")
	}
	if _, err := json.Marshal(Rule{When: func(json.RawMessage) (bool, error) { return false, nil }}); err == nil {
		t.Error("a predicate rule marshalled")
	}
}
