package turn_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// stepsScript has n-1 tool-calling steps and a final answer, no delays.
func stepsScript(n int) string {
	var b strings.Builder
	b.WriteString(`{"steps":[`)
	for i := range n - 1 {
		fmt.Fprintf(&b, `{"text":"step %d of the plan","toolCalls":[{"name":"get_weather","input":{"city":"C%d"}}]},`, i, i)
	}
	b.WriteString(`{"text":"all done"}]}`)
	return b.String()
}

// BenchmarkStep measures the runner's cost per step with a zero-delay
// scripted model, in-process against the emulator: the flush of each step
// to S3 included. A turn of 10, 100 and 1,000 steps runs in one
// invocation, so the per-step figures show whether a step's cost grows
// with the turn's length. It reports ns and allocations per step (the
// turn's whole cost over its steps), S3 PUTs per step and DynamoDB writes
// per turn; and marginal-ns/step, a step's cost without the turn's fixed
// cost (start, end, snapshot), which a one-step turn run untimed beside
// each timed one measures: (turn - one-step turn) / (steps - 1). On a
// loaded machine, compare cpu-ns/step: the process's CPU time (user and
// system, the emulator's share included) in the timed turns, per step,
// which other processes' load changes far less than the wall clock.
func BenchmarkStep(b *testing.B) { benchStep(b, nil, nil) }

// BenchmarkStepIntercepted is BenchmarkStep with a no-op interceptor on
// every kind of call (model, tool, step, fact log, stream store), for the
// seam's cost beside BenchmarkStep's run without one.
func BenchmarkStepIntercepted(b *testing.B) { benchStep(b, []intercept.Interceptor{noop()}, nil) }

// BenchmarkStepGuarded is BenchmarkStep with an input and an output
// guardrail that allow everything: the cost of checking every step, whose
// decisions are one more DynamoDB write per step (and the input's one per
// turn), and no more S3 PUTs.
func BenchmarkStepGuarded(b *testing.B) {
	allow := func(context.Context, guard.Subject) (guard.Decision, error) {
		return guard.Decision{Action: guard.Allow}, nil
	}
	benchStep(b, nil, []guard.Guardrail{{Name: "in", Stage: guard.Input, Check: allow}, {Name: "out", Stage: guard.Output, Check: allow}})
}

func benchStep(b *testing.B, ics []intercept.Interceptor, gs []guard.Guardrail) {
	onEmulator(b) // counts requests: the step's cost is on the real stores
	for _, steps := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			lim := turn.Limits{MaxStepsPerInvocation: steps + 1, MaxStepsPerTurn: steps + 1}
			agent, oneAgent := demoAgent(b, script(b, stepsScript(steps)), lim), demoAgent(b, script(b, stepsScript(1)), lim)
			agent.Guardrails, oneAgent.Guardrails = gs, gs
			inv := fresh(b, agent)
			one := fresh(b, oneAgent)
			inv.intercept(ics)
			one.intercept(ics)
			ctx := context.Background()
			ids := make([]string, b.N)
			ones := make([]string, b.N)
			for i := range ids {
				ids[i] = newSession(b, inv, "go")
				ones[i] = newSession(b, one, "go")
			}
			inv.counter.Reset()
			b.ReportAllocs()
			var mallocs uint64
			var cpu time.Duration // the process's CPU time in the timed turns
			var base time.Duration
			var ms runtime.MemStats
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				began := time.Now()
				if out, err := one.runner.Start(ctx, ones[i]); err != nil || out.Kind != turn.Completed {
					b.Fatalf("one-step turn: %+v %v", out, err)
				}
				base += time.Since(began)
				runtime.ReadMemStats(&ms)
				mallocs -= ms.Mallocs
				cpu -= cpuTime(b)
				b.StartTimer()
				out, err := inv.runner.Start(ctx, ids[i])
				b.StopTimer()
				cpu += cpuTime(b)
				runtime.ReadMemStats(&ms)
				mallocs += ms.Mallocs
				if err != nil || out.Kind != turn.Completed || out.Steps != steps {
					b.Fatalf("%+v %v", out, err)
				}
				b.StartTimer()
			}
			b.StopTimer()
			n := float64(b.N) * float64(steps)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
			b.ReportMetric(float64((b.Elapsed()-base).Nanoseconds())/float64(b.N)/float64(steps-1), "marginal-ns/step")
			b.ReportMetric(float64(mallocs)/n, "allocs/step")
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/step")
			b.ReportMetric(float64(inv.counter.Total("s3:PutObject"))/n, "s3-puts/step")
			b.ReportMetric(float64(inv.counter.Total("dynamodb:TransactWriteItems")+inv.counter.Total("dynamodb:PutItem"))/float64(b.N), "ddb-writes/turn")
			b.ReportMetric(float64(inv.counter.Total(""))/float64(b.N), "requests/turn")
		})
	}
}

// BenchmarkRebuild reports the requests needed to rebuild a session after
// 1, 10 and 100 completed turns: load its state and history, as Start does.
func BenchmarkRebuild(b *testing.B) {
	onEmulator(b) // counts requests, injects faults or reads the queue
	for _, turns := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			agent := demoAgent(b, script(b, stepsScript(2)), turn.Limits{})
			inv := fresh(b, agent)
			ctx := context.Background()
			id := newSession(b, inv, "first")
			for i := range turns {
				if i > 0 {
					sess, err := inv.sessions.Load(ctx, id)
					if err != nil {
						b.Fatal(err)
					}
					msg := reducer.Message{ID: fmt.Sprintf("m%d", i), Text: "again"}
					if _, err := inv.sessions.Append(ctx, id, sess.State, reducer.Fact{Type: reducer.MessageReceived, Actor: operator, Message: &msg}); err != nil {
						b.Fatal(err)
					}
				}
				if out, err := inv.runner.Start(ctx, id); err != nil || out.Kind != turn.Completed {
					b.Fatalf("turn %d: %+v %v", i, out, err)
				}
			}
			inv.counter.Reset()
			b.ResetTimer()
			for range b.N {
				sess, err := inv.sessions.Load(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				if got := len(sess.History); got != 4*turns {
					b.Fatalf("history has %d messages, want %d", got, 4*turns)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(inv.counter.Total(""))/float64(b.N), "requests/rebuild")
		})
	}
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
