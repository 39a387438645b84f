package faults_test

import (
	"testing"
	"time"

	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// A live flush that hangs past the step's deadline cuts the step short: the
// turn suspends for its budget instead of failing the invocation and
// waiting for the reaper, and the next invocation redoes the step once.
func TestLiveFlushAtTheDeadlineSuspends(t *testing.T) {
	lim := turn.Limits{Budget: 600 * time.Millisecond, Margin: 100 * time.Millisecond, LiveFlush: time.Millisecond}
	s := newStack(t, `{"steps":[{"text":"Hello there, operator.","delay":"200ms"}]}`, lim)
	id := s.session(t)
	// The step's first live flush hangs until the step's time is up.
	s.ft.Delay = 5 * time.Second
	s.ft.Set(faults.Rule{Op: putS3, Path: "/streams/", Times: 1, Fault: faults.Timeout})

	out, err := s.runner.Start(t.Context(), id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseBudget {
		t.Fatalf("start = %+v, %v; want suspended for its budget", out, err)
	}
	if n := s.ft.Count(putS3); n < 1 {
		t.Fatalf("%d faults injected", n)
	}
	s.ft.Set()
	out, err = s.runner.Resume(t.Context(), id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume = %+v, %v; want completed", out, err)
	}
	sess, err := s.sessions.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var answers int
	for _, m := range sess.History {
		for _, c := range m.Content {
			if c.Type == conversation.Text && c.Text == "Hello there, operator." {
				answers++
			}
		}
	}
	if answers != 1 {
		t.Fatalf("the answer appears %d times in the conversation, want once: %+v", answers, sess.History)
	}
}
