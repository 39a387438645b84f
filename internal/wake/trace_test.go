package wake

import (
	"testing"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
)

// TestTraceCarried: a wake carries its turn's traceparent through the
// queue; a trace that is not one is dropped on both ends, and the wake
// still goes.
func TestTraceCarried(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	url := newQueue(t)
	waker := NewSQS(testenv.Emulator().Clients.SQS, url)
	for _, trace := range []string{tp, "not-a-traceparent"} {
		if err := waker.Wake(t.Context(), Wake{Session: ids.New("s"), Reason: Budget, Trace: trace}, 0); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for len(got) < 2 {
		for _, m := range receive(t, url, 1) {
			w, err := Parse(*m.Body)
			if err != nil {
				t.Fatal(err)
			}
			got[w.Trace] = true
		}
	}
	if !got[tp] || !got[""] {
		t.Errorf("traces received %v, want %q and none", got, tp)
	}
	if w, err := Parse(`{"session":"s1","reason":"budget","trace":"00-zz"}`); err != nil || w.Trace != "" {
		t.Errorf("Parse kept a bad trace: %+v %v", w, err)
	}
}
