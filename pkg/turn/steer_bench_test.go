package turn_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// BenchmarkStepSteering measures what a steer or interrupt agent pays at
// each step boundary when no message arrives: one DynamoDB Query for the
// facts appended since the run's state, and no write. A 10-step turn per
// iteration; it reports ns/step, queries/step and writes/turn per policy.
func BenchmarkStepSteering(b *testing.B) {
	onEmulator(b) // counts requests, injects faults or reads the queue
	const steps = 10
	for _, policy := range []reducer.Steering{reducer.SteerEnqueue, reducer.SteerSteer} {
		b.Run(fmt.Sprintf("policy=%s", policy), func(b *testing.B) {
			agent := demoAgent(b, script(b, stepsScript(steps)), turn.Limits{})
			agent.Steering = policy
			inv := fresh(b, agent)
			ctx := context.Background()
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = newSession(b, inv, "go")
			}
			inv.counter.Reset()
			b.ResetTimer()
			for i := range b.N {
				if out, err := inv.runner.Start(ctx, ids[i]); err != nil || out.Kind != turn.Completed || out.Steps != steps {
					b.Fatalf("%+v %v", out, err)
				}
			}
			b.StopTimer()
			n := float64(b.N) * steps
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
			b.ReportMetric(float64(inv.counter.Total("dynamodb:Query"))/n, "queries/step")
			b.ReportMetric(float64(inv.counter.Total("dynamodb:TransactWriteItems")+inv.counter.Total("dynamodb:PutItem"))/float64(b.N), "ddb-writes/turn")
		})
	}
}

// With no message posted, a steer agent's turn writes exactly what an
// enqueue agent's does, and reads one page of new facts per step boundary.
func TestSteeringCostsOneQueryPerBoundary(t *testing.T) {
	t.Parallel()
	onEmulator(t) // counts requests, injects faults or reads the queue
	ctx := ctxT(t)
	const steps = 4
	counts := map[reducer.Steering][2]int64{}
	for _, policy := range []reducer.Steering{reducer.SteerEnqueue, reducer.SteerSteer} {
		agent := demoAgent(t, script(t, stepsScript(steps)), turn.Limits{})
		agent.Steering = policy
		inv := fresh(t, agent)
		id := newSession(t, inv, "go")
		inv.counter.Reset()
		if out, err := inv.runner.Start(ctx, id); err != nil || out.Kind != turn.Completed || out.Steps != steps {
			t.Fatalf("%s: %+v %v", policy, out, err)
		}
		counts[policy] = [2]int64{inv.counter.Total("dynamodb:Query"),
			inv.counter.Total("dynamodb:TransactWriteItems") + inv.counter.Total("dynamodb:PutItem") + inv.counter.Total("s3:PutObject")}
	}
	e, s := counts[reducer.SteerEnqueue], counts[reducer.SteerSteer]
	// One boundary before each step and one after the last.
	if s[0]-e[0] != steps+1 || s[1] != e[1] {
		t.Fatalf("steer: %d queries and %d writes; enqueue: %d and %d; want %d more queries and the same writes", s[0], s[1], e[0], e[1], steps+1)
	}
}
