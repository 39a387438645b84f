package tick_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	clk "github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// rewakeRuns is a tick on the test's clock and what its runs re-sent.
type rewakeRuns struct {
	t   *testing.T
	s   *stack
	clk *clk.Fake
	tk  *tick.Tick
}

// run runs k ticks at once at the clock's time and returns the wakes they
// sent, taken off the queue.
func (r *rewakeRuns) run(k int) []wake.Wake {
	r.t.Helper()
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			if rep, err := r.tk.Run(ctxT(r.t)); err != nil || rep.Errors != 0 {
				r.t.Errorf("run at %v = %+v, %v", r.clk.Now(), rep, err)
			}
		})
	}
	wg.Wait()
	return r.s.receive(r.t)
}

// newRewakeRuns is a tick on s with grace, on a clock set at from.
func newRewakeRuns(t *testing.T, s *stack, grace time.Duration, from time.Time) *rewakeRuns {
	c := clk.NewFake(from)
	tk := s.fresh(nil).tick
	tk.Grace, tk.Now = grace, c.Clock()
	return &rewakeRuns{t: t, s: s, clk: c, tk: tk}
}

// A lost wake is re-sent once per grace however many ticks run meanwhile,
// one at a time or at once; a re-send lost in turn is re-sent a grace
// later; and once the session moves on, nothing more is sent.
func TestLostWakeIsResentOncePerGrace(t *testing.T) {
	t.Parallel()
	const grace = time.Minute
	s := newStack(t)
	inv := s.fresh(nil)
	id := newSession(t, inv, "Anyone?") // idle with a message: waits for its wake, which never came
	h0, err := inv.sessions.Head(ctxT(t), id)
	if err != nil || h0.Why != reducer.ReasonInbox {
		t.Fatalf("head = %+v, %v", h0, err)
	}
	r := newRewakeRuns(t, s, grace, h0.Due)

	// Within the grace the wake may still be in flight.
	r.clk.Advance(grace / 2)
	if got := r.run(1); len(got) != 0 {
		t.Fatalf("within the grace the tick sent %v", got)
	}

	// Past it, four ticks at once re-send it once; the ticks of the next
	// grace, every 10 s, send nothing more.
	r.clk.Advance(grace/2 + time.Second)
	if got := r.run(4); len(got) != 1 || got[0].Session != id || got[0].Reason != wake.Rewake {
		t.Fatalf("past the grace, four ticks at once sent %v, want one re-sent wake", got)
	}
	for range 5 {
		r.clk.Advance(10 * time.Second)
		if got := r.run(2); len(got) != 0 {
			t.Fatalf("%v after the re-send the ticks sent %v again", r.clk.Now().Sub(h0.Due), got)
		}
	}
	h, err := inv.sessions.Head(ctxT(t), id)
	if err != nil || h.Rewoken.IsZero() || h.LastSeq != h0.LastSeq || h.Why != reducer.ReasonInbox {
		t.Fatalf("head after the re-send = %+v, %v: want the re-send recorded, nothing else changed", h, err)
	}

	// That re-send was lost too (the test took it off the queue): a grace
	// after it, the tick re-sends it again, once.
	r.clk.Advance(10 * time.Second)
	if got := r.run(3); len(got) != 1 || got[0].Session != id {
		t.Fatalf("a grace after a lost re-send the ticks sent %v, want one wake", got)
	}

	// The session moves on (a new message, new facts): the record goes with
	// the head it was on, and the new wait gets a grace of its own.
	st := teststack.Load(t, inv.sessions, id)
	teststack.Post(t, inv.sessions, id, st, "Still there?")
	h1, err := inv.sessions.Head(ctxT(t), id)
	if err != nil || !h1.Rewoken.IsZero() || h1.LastSeq != st.LastSeq+1 {
		t.Fatalf("head after the new message = %+v, %v: want the re-send forgotten", h1, err)
	}
	r.clk.Set(h1.Due.Add(grace / 2))
	if got := r.run(2); len(got) != 0 {
		t.Fatalf("within the new wait's grace the ticks sent %v", got)
	}
}

// A re-send is recorded only on the head it was decided on: a head that
// moved on, or one another run recorded its re-send on, refuses it.
func TestRewokeNeedsTheHeadUnchanged(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	inv := s.fresh(nil)
	id := newSession(t, inv, "Anyone?")
	h, err := inv.sessions.Head(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	at := h.Due.Add(2 * time.Minute)
	if err := inv.sessions.Rewoke(ctx, h, at, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := inv.sessions.Rewoke(ctx, h, at, at.Add(time.Minute)); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("a second record on the same head: %v, want a conflict", err)
	}
	got, err := inv.sessions.Head(ctx, id)
	if err != nil || !got.Due.Equal(at.Add(time.Minute).Truncate(time.Millisecond)) || !got.Rewoken.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("head = %+v, %v", got, err)
	}
	if got.Lost(at.Add(59*time.Second), time.Minute) || !got.Lost(at.Add(time.Minute), time.Minute) {
		t.Fatalf("a re-sent head is lost again from its due time, a grace after the re-send: %+v", got)
	}

	teststack.Post(t, inv.sessions, id, teststack.Load(t, inv.sessions, id), "Still there?")
	if err := inv.sessions.Rewoke(ctx, got, at, at.Add(time.Minute)); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("a record on a head that moved on: %v, want a conflict", err)
	}
}

// A session whose facts moved on between the tick's read of the due index
// and its re-send is not re-sent.
func TestMovedOnSessionIsNotResent(t *testing.T) {
	t.Parallel()
	const grace = time.Minute
	s := newStack(t)
	inv := s.fresh(nil)
	id := newSession(t, inv, "Anyone?")
	h, err := inv.sessions.Head(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	r := newRewakeRuns(t, s, grace, h.Due.Add(grace+time.Second))
	// The session starts a turn, as a worker handling the late wake would:
	// it waits for no wake any more.
	st := teststack.Load(t, inv.sessions, id)
	turnID := "turn_moved"
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turnID}
	if _, err := inv.sessions.Append(ctxT(t), id, st, reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turnID, Stream: turnID,
		Lease: r.clk.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := r.run(2); len(got) != 0 {
		t.Fatalf("the ticks re-sent %v to a session that moved on", got)
	}
}
