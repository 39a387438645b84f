package tick_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// clock is a settable clock shared by a test's stores and tick.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// waiting starts a turn whose model calls wait_until three days ahead of
// the clock, and returns the invocation, the session and that time.
func waiting(t *testing.T, s *stack, c *clock) (*invocation, string, time.Time) {
	t.Helper()
	until := c.now().Add(72 * time.Hour).Truncate(time.Second)
	js := fmt.Sprintf(`{"steps":[
 {"text":"waiting","toolCalls":[{"name":"wait_until","input":{"until":%q}}]},
 {"text":"woke up"}
]}`, until.Format(time.RFC3339))
	agent := demoAgent(t, script(t, js), turn.Limits{})
	reg, err := tool.NewRegistry(append(tool.Demo(), tool.WaitUntil())...)
	if err != nil {
		t.Fatal(err)
	}
	agent.Tools = reg
	inv := s.fresh(agent)
	inv.sessions.Now, inv.tick.Now = c.now, c.now
	id := newSession(t, inv, "Wait three days.")
	out, err := inv.runner.Start(ctxT(t), id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseTimer {
		t.Fatalf("start: %+v, %v", out, err)
	}
	st := teststack.Load(t, inv.sessions, id)
	if n := st.Next(c.now(), 0); n.Reason != reducer.ReasonTimer || !n.Due.Equal(until) || n.Action != reducer.None {
		t.Fatalf("need while waiting: %+v, want timer due %v", n, until)
	}
	return inv, id, until
}

func countFacts(t *testing.T, inv *invocation, id string, ty reducer.Type) int {
	t.Helper()
	n := 0
	for _, f := range teststack.Facts(t, inv.sessions, id) {
		if f.Type == ty {
			n++
		}
	}
	return n
}

func TestTimerResumesOnceAtItsTime(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	c := &clock{t: time.Now().UTC()}
	inv, id, until := waiting(t, s, c)
	stream := teststack.Load(t, inv.sessions, id).Turn.Stream

	// The delayed wake (at most wake.MaxDelay ahead) or any early wake
	// resumes nothing.
	if _, err := inv.worker.Handle(ctx, wake.Wake{Session: id, Reason: wake.Message}); err != nil {
		t.Fatal(err)
	}
	// A tick before the time sends nothing.
	c.set(until.Add(-time.Minute))
	if rep, err := inv.tick.Run(ctx); err != nil || rep.Rewoken != 0 {
		t.Fatalf("tick before the time: %+v, %v", rep, err)
	}
	if ws := s.receive(t); len(ws) != 0 {
		t.Fatalf("wakes before the time: %+v", ws)
	}
	if n := countFacts(t, inv, id, reducer.TurnResumed); n != 0 {
		t.Fatalf("resumed %d times before the time", n)
	}

	// Once due, one tick sends one wake, and it resumes the turn once.
	c.set(until.Add(time.Second))
	if rep, err := inv.tick.Run(ctx); err != nil || rep.Rewoken != 1 {
		t.Fatalf("tick at the time: %+v, %v", rep, err)
	}
	ws := s.receive(t)
	if len(ws) != 1 {
		t.Fatalf("wakes at the time: %+v", ws)
	}
	for range 2 { // a duplicate delivery changes nothing
		if _, err := inv.worker.Handle(ctx, ws[0]); err != nil {
			t.Fatal(err)
		}
	}
	st := teststack.Load(t, inv.sessions, id)
	if st.Status != reducer.Idle || countFacts(t, inv, id, reducer.TurnResumed) != 1 || countFacts(t, inv, id, reducer.TurnCompleted) != 1 {
		t.Fatalf("after the wake: %s, facts %+v", st.Status, teststack.Facts(t, inv.sessions, id))
	}
	var got string
	for _, p := range readParts(t, inv, id, stream) {
		if p.Type == parts.ToolOutputAvailable {
			got = string(p.Output)
		}
	}
	if want := until.Format(time.RFC3339); !strings.Contains(got, want) {
		t.Fatalf("wait_until result %q, want it to name %s", got, want)
	}

	// A later tick has nothing to do.
	c.set(until.Add(time.Hour))
	if rep, err := inv.tick.Run(ctx); err != nil || rep.Rewoken != 0 || rep.Seen != 0 {
		t.Fatalf("tick after: %+v, %v", rep, err)
	}
}

func TestCancelledTimerNeverFires(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	c := &clock{t: time.Now().UTC()}
	inv, id, until := waiting(t, s, c)
	if err := inv.sessions.Cancel(ctx, id, alice, "no longer needed"); err != nil {
		t.Fatal(err)
	}
	s.receive(t) // the cancel's own wake
	c.set(until.Add(time.Hour))
	if rep, err := inv.tick.Run(ctx); err != nil || rep.Rewoken != 0 {
		t.Fatalf("tick past a cancelled timer: %+v, %v", rep, err)
	}
	if ws := s.receive(t); len(ws) != 0 {
		t.Fatalf("wakes for a cancelled timer: %+v", ws)
	}
	if n := countFacts(t, inv, id, reducer.TurnResumed); n != 0 {
		t.Fatalf("a cancelled timer resumed %d times", n)
	}
}

// An operator's timer.set at now ends the wait: the turn resumes once,
// now, and at the time wait_until named nothing fires.
func TestEndedWaitNeverFiresAtItsOldTime(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	c := &clock{t: time.Now().UTC()}
	inv, id, until := waiting(t, s, c)
	s.receive(t) // the suspension's delayed wake, if visible
	if err := inv.sessions.SetTimer(ctx, id, alice, c.now()); err != nil {
		t.Fatal(err)
	}
	ws := s.receive(t)
	if len(ws) != 1 || ws[0].Reason != wake.Timer {
		t.Fatalf("wakes after the timer was ended: %+v", ws)
	}
	if _, err := inv.worker.Handle(ctx, ws[0]); err != nil {
		t.Fatal(err)
	}
	if st := teststack.Load(t, inv.sessions, id); st.Status != reducer.Idle || countFacts(t, inv, id, reducer.TurnResumed) != 1 {
		t.Fatalf("after the ended wait: %s", st.Status)
	}
	c.set(until.Add(time.Second))
	if rep, err := inv.tick.Run(ctx); err != nil || rep.Rewoken != 0 || rep.Seen != 0 {
		t.Fatalf("tick at the old time: %+v, %v", rep, err)
	}
	if n := countFacts(t, inv, id, reducer.TurnResumed); n != 1 {
		t.Fatalf("resumed %d times", n)
	}
}
