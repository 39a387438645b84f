package tick_test

import (
	"context"
	"sync"
	"testing"
	"time"

	clk "github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/pkg/reducer"
)

// suspendedLongAgo appends, in one write, a session whose turn suspended for
// its budget at old and whose wake never came.
func suspendedLongAgo(ctx context.Context, inv *invocation, old time.Time) error {
	id, turnID := ids.New("s"), ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turnID}
	msg := reducer.Message{ID: ids.New("msg"), Text: "go"}
	_, err := inv.sessions.Append(ctx, id, reducer.State{},
		reducer.Fact{Type: reducer.SessionCreated, Actor: alice, Agent: "demo", Owner: "alice", Time: old},
		reducer.Fact{Type: reducer.MessageReceived, Actor: alice, Message: &msg, Time: old},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turnID, Stream: turnID, Lease: old.Add(15 * time.Minute), Time: old},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turnID, Cause: reducer.CauseBudget, Time: old},
	)
	return err
}

// BenchmarkTick measures one tick run over 1,000 sessions whose wakes were
// lost (suspended for budget ten minutes ago), in-process against the
// emulator: the index pages, a reload of each session and a re-sent wake.
// Each run is a grace after the one before, so every wake is lost again.
func BenchmarkTick(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	s := newEmuStack(b)
	inv := s.fresh(nil)
	old := time.Now().Add(-10 * time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// Distinct due times: kumo orders index items with equal sort
			// keys arbitrarily on every query, so paging through ties
			// skips some and repeats others (DynamoDB does not).
			if err := suspendedLongAgo(ctx, inv, old.Add(time.Duration(i)*time.Millisecond)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	run := s.fresh(nil)
	c := clk.NewFake(time.Now())
	run.tick.Now = c.Clock()
	b.ResetTimer()
	for range b.N {
		c.Advance(tick.DefaultGrace + time.Second)
		rep, err := run.tick.Run(ctx)
		if err != nil || rep.Seen != n || rep.Rewoken != n || rep.Stopped {
			b.Fatalf("run = %+v, %v", rep, err)
		}
	}
	b.StopTimer()
	total := float64(n * b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "sessions/s")
	b.ReportMetric(float64(run.counter.Total(""))/total, "requests/session")
	b.ReportMetric(float64(run.counter.Total("dynamodb:Query"))/float64(b.N), "queries/run")
}
