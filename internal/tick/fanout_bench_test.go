package tick_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

// BenchmarkTickBurst measures one tick run over a burst of due schedules (a
// daily schedule for every user, all due by the run), on the emulator and
// in memory, for 1,000 and 10,000 sessions: each post is a reload of the
// session, one write (schedule.fired and message.received) and a wake. It
// reports the sessions posted per second and the requests each took (on the
// emulator: DynamoDB and SQS requests, SendMessageBatch counting once for
// up to 10 wakes). The in-memory store answers at once, so the two
// together say which share of the emulator's time is the emulator's: its
// Query walks the whole table, a cost a table of one session's items never
// shows and DynamoDB does not have.
//
//	go test ./internal/tick -run XXX -bench TickBurst -benchtime 1x
func BenchmarkTickBurst(b *testing.B) {
	for _, store := range []string{"memory", "emulator"} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/%d", store, n), func(b *testing.B) {
				var posted, requests float64
				var elapsed time.Duration
				for range b.N {
					b.StopTimer()
					s := newStack(b)
					if store == "emulator" {
						s = newEmuStack(b)
					}
					burst(b, s, n)
					run := s.fresh(nil)
					run.tickAt(func() time.Time { return burstAt })
					b.StartTimer()
					began := time.Now()
					rep, err := run.tick.Run(context.Background())
					elapsed += time.Since(began)
					b.StopTimer()
					if err != nil || rep.Posted != n || rep.Stopped || rep.Errors != 0 {
						b.Fatalf("run = %+v, %v; want %d posted", rep, err, n)
					}
					posted += float64(n)
					if run.counter != nil {
						requests += float64(run.counter.Total(""))
					}
				}
				b.ReportMetric(posted/elapsed.Seconds(), "sessions/s")
				if requests > 0 {
					b.ReportMetric(requests/posted, "requests/session")
				}
			})
		}
	}
}

// burstFrom is when the burst's schedules were set; burstAt when the tick
// runs: every daily occurrence from 23:00 on one day to 23:59 the next is
// due.
var (
	burstFrom = time.Date(2029, 12, 31, 23, 0, 0, 0, time.UTC)
	burstAt   = time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
)

// burst creates n idle sessions, in one write each, whose daily schedules
// are due by burstAt, spread over the minutes of a day (the emulator orders
// index items with equal keys arbitrarily on every query, which pages
// through ties unevenly).
func burst(tb testing.TB, s *stack, n int) {
	ctx := context.Background()
	inv := s.fresh(nil)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			id := ids.New("s")
			_, err := inv.sessions.Append(ctx, id, reducer.State{},
				reducer.Fact{Type: reducer.SessionCreated, Actor: alice, Agent: "demo", Owner: "alice", Time: burstFrom},
				reducer.Fact{Type: reducer.ScheduleSet, Actor: alice, Time: burstFrom,
					Schedule: &reducer.Schedule{Cron: fmt.Sprintf("%d %d * * *", i%60, (i/60)%24), Text: "report"}},
			)
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}
