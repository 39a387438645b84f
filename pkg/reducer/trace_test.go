package reducer_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/baton-run/baton/pkg/reducer"
)

const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func traced(tp string) opt { return func(f *reducer.Fact) { f.Trace = tp } }

// TestTurnTrace: the trace context a turn.started fact records is the
// turn's, a message keeps its request's, and both survive a JSON round
// trip byte for byte; a trace that is not a traceparent is refused.
func TestTurnTrace(t *testing.T) {
	b := newBuilder()
	created := b.created()
	msg := b.message("m1", edit(func(f *reducer.Fact) { f.Message.Trace = tp }))
	log := []reducer.Fact{created, msg, b.started("t1", traced(tp))}
	st, err := reducer.Reduce(log)
	if err != nil {
		t.Fatal(err)
	}
	if st.Turn.Trace != tp || st.Turn.Messages[0].Trace != tp {
		t.Fatalf("turn trace %q, message trace %q; want %q", st.Turn.Trace, st.Turn.Messages[0].Trace, tp)
	}
	for _, f := range log[1:] {
		raw, _ := json.Marshal(f)
		var back reducer.Fact
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(raw) {
			t.Errorf("fact does not round-trip:\n%s\n%s", raw, again)
		}
	}

	var te *reducer.TransitionError
	b = newBuilder()
	if _, err := reducer.Reduce([]reducer.Fact{b.created(), b.message("m1"), b.started("t1", traced("00-nope"))}); !errors.As(err, &te) {
		t.Errorf("a turn.started with a bad trace: %v, want a TransitionError", err)
	}
	b = newBuilder()
	created = b.created()
	bad := b.message("m1", edit(func(f *reducer.Fact) { f.Message.Trace = "traceparent" }))
	if _, err := reducer.Reduce([]reducer.Fact{created, bad}); !errors.As(err, &te) {
		t.Errorf("a message with a bad trace: %v, want a TransitionError", err)
	}
}
