package reducer_test

import (
	"reflect"
	"testing"

	"github.com/baton-run/baton/pkg/reducer"
)

func ids(ms []reducer.Message) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// A steer message waits in Turn.Steer, message.steered moves it to
// Turn.Steered, and the turn ends with nothing left for the inbox.
func TestSteerDeliveredIntoTheTurn(t *testing.T) {
	b := newBuilder()
	log := append(b.running(), b.message("m2", delivery(reducer.SteerSteer)), b.message("m3", delivery(reducer.SteerSteer)))
	s := mustReduce(t, log)
	if got := ids(s.Turn.Steer); !reflect.DeepEqual(got, []string{"m2", "m3"}) || len(s.Inbox) != 0 {
		t.Fatalf("steer %v inbox %v, want m2 m3 waiting to be steered and an empty inbox", got, ids(s.Inbox))
	}
	log = append(log, b.steered("m3"))
	s = mustReduce(t, log)
	if got, done := ids(s.Turn.Steer), ids(s.Turn.Steered); !reflect.DeepEqual(got, []string{"m2"}) || !reflect.DeepEqual(done, []string{"m3"}) {
		t.Fatalf("after message.steered m3: steer %v steered %v", got, done)
	}
	if s.Turn.Steered[0].Delivery != reducer.SteerSteer || s.Turn.Steered[0].Text != "text of m3" {
		t.Fatalf("steered message = %+v", s.Turn.Steered[0])
	}
	// m2 was never delivered: it starts the next turn, ahead of a message
	// that was only queued.
	log = append(log, b.message("m4"), b.completed())
	s = mustReduce(t, log)
	if got := ids(s.Inbox); !reflect.DeepEqual(got, []string{"m2", "m4"}) || s.Turn != nil {
		t.Fatalf("after the turn: inbox %v turn %v, want m2 m4 and no turn", got, s.Turn)
	}
	if n := s.Next(b.now, 0); n.Action != reducer.Start {
		t.Fatalf("Next = %+v, want Start", n)
	}
}

// An interrupt message waits in the inbox and marks the turn; turn.interrupted
// ends it, from a running or a suspended turn, and the message starts the next.
func TestInterruptEndsTheTurn(t *testing.T) {
	for _, prefix := range []string{"running", "awaiting approval"} {
		t.Run(prefix, func(t *testing.T) {
			b := newBuilder()
			var log []reducer.Fact
			if prefix == "running" {
				log = b.running()
			} else {
				log = b.awaitingApprovals()
			}
			log = append(log, b.message("m2", delivery(reducer.SteerInterrupt)))
			s := mustReduce(t, log)
			if !s.Turn.Interrupt || !reflect.DeepEqual(ids(s.Inbox), []string{"m2"}) {
				t.Fatalf("interrupt %v inbox %v", s.Turn.Interrupt, ids(s.Inbox))
			}
			log = append(log, b.interrupted(usage(10, 5, 1), snapshot("snap")))
			s = mustReduce(t, log)
			if s.Status != reducer.Idle || s.Last != reducer.TurnInterrupted || s.Turns != 1 || s.Snapshot != "snap" || s.Usage.Steps != 1 {
				t.Fatalf("after turn.interrupted: %s", mustJSON(t, s))
			}
			if n := s.Next(b.now, 0); n.Action != reducer.Start || !reflect.DeepEqual(ids(s.Inbox), []string{"m2"}) {
				t.Fatalf("Next = %+v inbox %v, want Start on m2", n, ids(s.Inbox))
			}
		})
	}
}

// An enqueue message, and one with no delivery (written before steering
// existed), wait in the inbox and leave the turn alone.
func TestEnqueueLeavesTheTurnAlone(t *testing.T) {
	b := newBuilder()
	s := mustReduce(t, append(b.running(), b.message("m2", delivery(reducer.SteerEnqueue)), b.message("m3")))
	if got := ids(s.Inbox); !reflect.DeepEqual(got, []string{"m2", "m3"}) || s.Turn.Interrupt || len(s.Turn.Steer) != 0 {
		t.Fatalf("inbox %v turn %s", got, mustJSON(t, s.Turn))
	}
}

// Apply copies the steer lists: a state folded further never changes the
// one it came from.
func TestSteerListsAreCopied(t *testing.T) {
	b := newBuilder()
	s := mustReduce(t, append(b.running(), b.message("m2", delivery(reducer.SteerSteer))))
	next, err := s.Apply(b.steered("m2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Turn.Steer) != 1 || len(s.Turn.Steered) != 0 || len(next.Turn.Steered) != 1 {
		t.Fatalf("before %s after %s", mustJSON(t, s.Turn), mustJSON(t, next.Turn))
	}
}
