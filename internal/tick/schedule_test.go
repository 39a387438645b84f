package tick_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// A schedule posts its message once per occurrence: a tick before it does
// nothing, ticks after it post one message with the occurrence's ID, the
// turn answers it, the next occurrence is a day later, and a cleared
// schedule never fires again.
func TestSchedulePostsOncePerOccurrence(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	c := &clock{t: time.Date(2030, 1, 1, 8, 0, 0, 0, time.UTC)}
	inv := s.fresh(demoAgent(t, script(t, `{"steps":[{"text":"Good morning to you."}]}`), turn.Limits{}))
	inv.sessions.Now, inv.tick.Now = c.now, c.now
	id := ids.New("s")
	if _, err := inv.sessions.Create(ctx, id, alice.ID, "demo"); err != nil {
		t.Fatal(err)
	}
	if err := inv.sessions.SetSchedule(ctx, id, alice, "0 9 * * *", "Good morning."); err != nil {
		t.Fatal(err)
	}
	nine := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	if n := teststack.Load(t, inv.sessions, id).Next(c.now(), time.Minute); n.Reason != reducer.ReasonSchedule || !n.Due.Equal(nine) || n.Action != reducer.None {
		t.Fatalf("need before nine: %+v", n)
	}
	c.set(nine.Add(-time.Minute))
	if rep, err := inv.tick.Run(ctx); err != nil || rep.Posted != 0 {
		t.Fatalf("tick before nine: %+v, %v", rep, err)
	}

	c.set(nine.Add(time.Second))
	posted := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 3 { // ticks at once post it once
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := s.fresh(nil).tickAt(c.now).Run(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			posted += rep.Posted
			mu.Unlock()
		}()
	}
	wg.Wait()
	if rep, err := inv.tick.Run(ctx); err != nil || rep.Posted != 0 {
		t.Fatalf("a later tick: %+v, %v", rep, err)
	}
	var msgs []reducer.Message
	for _, f := range teststack.Facts(t, inv.sessions, id) {
		if f.Type == reducer.MessageReceived {
			msgs = append(msgs, *f.Message)
		}
	}
	if posted != 1 || len(msgs) != 1 || msgs[0].ID != reducer.OccurrenceID(nine) || msgs[0].Text != "Good morning." {
		t.Fatalf("posted %d, messages %+v", posted, msgs)
	}
	ws := s.receive(t)
	if len(ws) != 1 {
		t.Fatalf("wakes: %+v", ws)
	}
	if _, err := inv.worker.Handle(ctx, ws[0]); err != nil {
		t.Fatal(err)
	}
	st := teststack.Load(t, inv.sessions, id)
	if n := st.Next(c.now(), time.Minute); st.Status != reducer.Idle || st.Turns != 1 || n.Reason != reducer.ReasonSchedule || !n.Due.Equal(nine.Add(24*time.Hour)) {
		t.Fatalf("after the turn: %s, %d turns, need %+v", st.Status, st.Turns, n)
	}

	if err := inv.sessions.ClearSchedule(ctx, id, alice); err != nil {
		t.Fatal(err)
	}
	c.set(nine.Add(48 * time.Hour))
	if rep, err := inv.tick.Run(ctx); err != nil || rep.Posted != 0 || rep.Seen != 0 {
		t.Fatalf("tick after clearing: %+v, %v", rep, err)
	}
}

// tickAt sets the invocation's clocks to now and returns its tick.
func (inv *invocation) tickAt(now func() time.Time) *tick.Tick {
	inv.sessions.Now, inv.tick.Now = now, now
	return inv.tick
}

// scheduled creates, in one write, an idle session with a schedule set at
// from whose one occurrence a day is at hour:minute.
func scheduled(ctx context.Context, inv *invocation, from time.Time, hour, minute int) error {
	id := ids.New("s")
	_, err := inv.sessions.Append(ctx, id, reducer.State{},
		reducer.Fact{Type: reducer.SessionCreated, Actor: alice, Agent: "demo", Owner: "alice", Time: from},
		reducer.Fact{Type: reducer.ScheduleSet, Actor: alice, Time: from,
			Schedule: &reducer.Schedule{Cron: fmt.Sprintf("%d %d * * *", minute, hour), Text: "report"}},
	)
	return err
}

// TestThousandSchedulesFireInOneTick shows one tick run, against the
// emulator, posting the due occurrence of each of 1,000 scheduled sessions,
// each once: a second run finds nothing due.
func TestThousandSchedulesFireInOneTick(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("1,000 sessions")
	}
	ctx := context.Background()
	run, _ := fireSchedules(t, 1000, 7, minuteApart)
	rep, err := run.tick.Run(ctx)
	if err != nil || rep.Posted != 0 {
		t.Fatalf("a second run: %+v, %v; want nothing posted", rep, err)
	}
}

// BenchmarkTickSchedules measures one tick run over 1,000 sessions whose
// schedules are due, in-process against the emulator: each posts its
// message (schedule.fired and message.received in one write) and a wake.
// The occurrences are a minute apart, all before the run's clock.
func BenchmarkTickSchedules(b *testing.B) {
	const n = 1000
	var total, requests float64
	var elapsed time.Duration
	for range b.N {
		b.StopTimer()
		run, took := fireSchedules(b, n, 0, minuteApart)
		elapsed += took
		total += n
		requests += float64(run.counter.Total(""))
	}
	b.ReportMetric(total/elapsed.Seconds(), "sessions/s")
	b.ReportMetric(requests/total, "requests/session")
}

// Every posted schedule moves its head in the index (due a day later) while
// the run pages: many pages of a few heads each skip none, whether the
// occurrences are a minute apart or all at one time (ties).
func TestTickPagesSkipNothing(t *testing.T) {
	t.Parallel()
	for name, at := range map[string]func(int) (int, int){"apart": minuteApart, "tied": sameMinute} {
		t.Run(name, func(t *testing.T) {
			run, _ := fireSchedules(t, 150, 4, at)
			if rep, err := run.tick.Run(context.Background()); err != nil || rep.Posted != 0 {
				t.Fatalf("a second run: %+v, %v; want nothing posted", rep, err)
			}
		})
	}
}

// minuteApart and sameMinute place schedule i's daily occurrence: at
// 00:00 plus i minutes, or all at 05:00.
func minuteApart(i int) (int, int) { return i / 60, i % 60 }
func sameMinute(int) (int, int)    { return 5, 0 }

// fireSchedules makes n sessions whose schedules are due, each at the
// hour and minute at(i) says, and runs one tick over them reading pageSize
// heads per page (0: the default), which must post every one; it returns
// the tick's invocation and the run's time. A benchmark's timer runs only
// during the tick.
func fireSchedules(tb testing.TB, n int, pageSize int32, at func(int) (int, int)) (*invocation, time.Duration) {
	ctx := context.Background()
	from := time.Date(2029, 12, 31, 23, 0, 0, 0, time.UTC)
	runAt := time.Date(2030, 1, 1, 17, 0, 0, 0, time.UTC)
	s := newStack(tb)
	if _, bench := tb.(*testing.B); bench {
		s = newEmuStack(tb) // the benchmark counts the emulator's requests
	}
	inv := s.fresh(nil)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			hour, minute := at(i)
			if err := scheduled(ctx, inv, from, hour, minute); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	run := s.fresh(nil)
	run.tickAt(func() time.Time { return runAt })
	run.tick.PageSize = pageSize
	b, _ := tb.(*testing.B)
	if b != nil {
		b.StartTimer()
	}
	start := time.Now()
	rep, err := run.tick.Run(ctx)
	took := time.Since(start)
	if b != nil {
		b.StopTimer()
	}
	if err != nil || rep.Posted != n || rep.Stopped {
		tb.Fatalf("run = %+v, %v; want %d posted", rep, err, n)
	}
	return run, took
}
