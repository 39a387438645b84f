package tick_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
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
// shows and DynamoDB does not have. The third store, "latency", is the
// in-memory one with a round trip of roundTrip added to every request (a
// fact log read or write, a wake or a batch of them), as DynamoDB and SQS
// within a region add: what the tick's fan-out makes of a deployed
// store's latency, without an emulator's own cost.
//
//	go test ./internal/tick -run XXX -bench TickBurst -benchtime 1x
func BenchmarkTickBurst(b *testing.B) {
	for _, store := range []string{"memory", "latency", "emulator"} {
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
					if store == "latency" {
						run.sessions = run.sessions.Decorate(func(l session.FactLog) session.FactLog { return slowLog{l} }, nil)
						run.tick = &tick.Tick{Sessions: run.sessions, Waker: slowWakes{s.mem.Wakes}}
					}
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

// roundTrip is the latency store's time per request: about a DynamoDB
// query's or transaction's, or an SQS send's, from Lambda in the region.
const roundTrip = 10 * time.Millisecond

func pause(ctx context.Context) error {
	select {
	case <-time.After(roundTrip):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// slowLog is a fact log whose requests each take roundTrip first; Due
// takes it once per page.
type slowLog struct{ session.FactLog }

func (l slowLog) Tail(ctx context.Context, id string) ([]reducer.Fact, error) {
	if err := pause(ctx); err != nil {
		return nil, err
	}
	return l.FactLog.Tail(ctx, id)
}

func (l slowLog) Head(ctx context.Context, id string) (dynamo.Head, error) {
	if err := pause(ctx); err != nil {
		return dynamo.Head{}, err
	}
	return l.FactLog.Head(ctx, id)
}

func (l slowLog) Append(ctx context.Context, id string, next reducer.State, fs ...reducer.Fact) error {
	if err := pause(ctx); err != nil {
		return err
	}
	return l.FactLog.Append(ctx, id, next, fs...)
}

func (l slowLog) AppendWithReceipt(ctx context.Context, id string, next reducer.State, rc *dynamo.Receipt, fs ...reducer.Fact) error {
	if err := pause(ctx); err != nil {
		return err
	}
	return l.FactLog.AppendWithReceipt(ctx, id, next, rc, fs...)
}

func (l slowLog) Due(ctx context.Context, shard int, before time.Time, limit int32, fn func(dynamo.Head) error) (int, error) {
	if err := pause(ctx); err != nil {
		return 0, err
	}
	return l.FactLog.Due(ctx, shard, before, limit, fn)
}

// slowWakes is a wake queue whose sends, one wake or a batch, each take
// roundTrip.
type slowWakes struct{ wake.Waker }

func (w slowWakes) Wake(ctx context.Context, wk wake.Wake, d time.Duration) error {
	if err := pause(ctx); err != nil {
		return err
	}
	return w.Waker.Wake(ctx, wk, d)
}

func (w slowWakes) WakeBatch(ctx context.Context, ws []wake.Wake) ([]wake.Wake, error) {
	if err := pause(ctx); err != nil {
		return ws, err
	}
	for i, wk := range ws {
		if err := w.Waker.Wake(ctx, wk, 0); err != nil {
			return ws[i:], err
		}
	}
	return nil, nil
}
