package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// BenchmarkLongSession runs one session for 1,000 one-step turns (a note of
// about 170 bytes, an answer of about 330) with compaction on: a budget of
// 900 input tokens, two turns kept, a scripted summariser. At turns 1, 10,
// 100 and 1,000 it reports the last request's input tokens (in-tokens@N),
// the snapshot the session rebuilds from (snapshot-B@N) and the time to
// rebuild the model input from durable state (rebuild-ns@N: a load of the
// facts and snapshot, then conversation.Build; the mean of 10). It also
// reports the largest request (max-in-tokens) and the compactions. The
// sub-benchmark with compaction off stops at 100 turns, for comparison.
func BenchmarkLongSession(b *testing.B) {
	onEmulator(b) // counts a rebuild's requests
	for _, c := range []struct {
		name    string
		compact bool
		turns   int
	}{{"compaction=on", true, 1000}, {"compaction=off", false, 100}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				longSession(b, c.compact, c.turns)
			}
		})
	}
}

func longSession(b *testing.B, compact bool, turns int) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	agent, rec := compactingAgent(&testing.T{}, script(b, longAnswer), script(b, summaryScript), turn.Limits{})
	if !compact {
		agent.Compaction = nil
	}
	inv := fresh(b, agent)
	ctx := context.Background()
	id := teststack.NewSession(b, inv.sessions, "demo", note(0))
	var peak int64
	for i := range turns {
		if i > 0 {
			if _, err := inv.sessions.Post(ctx, id, teststack.Alice, note(i)); err != nil {
				b.Fatal(err)
			}
		}
		if out, err := inv.runner.Start(ctx, id); err != nil || out.Kind != turn.Completed {
			b.Fatalf("turn %d: %+v, %v", i, out, err)
		}
		n := rec.est[len(rec.est)-1]
		peak = max(peak, n)
		if at := i + 1; slices.Contains([]int{1, 10, 100, 1000}, at) {
			b.ReportMetric(float64(n), fmt.Sprintf("in-tokens@%d", at))
			inv.counter.Reset()
			size, took, decode := rebuild(b, inv.sessions, id)
			b.ReportMetric(float64(inv.counter.Total(""))/10, fmt.Sprintf("rebuild-requests@%d", at))
			b.ReportMetric(float64(size), fmt.Sprintf("snapshot-B@%d", at))
			b.ReportMetric(float64(took.Nanoseconds()), fmt.Sprintf("rebuild-ns@%d", at))
			b.ReportMetric(float64(decode.Nanoseconds()), fmt.Sprintf("decode-ns@%d", at))
		}
	}
	st, err := inv.sessions.Load(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(peak), "max-in-tokens")
	b.ReportMetric(float64(st.State.Compactions), "compactions")
}

// rebuild loads the session and builds its model input, ten times, and
// returns the size of the snapshot it rebuilds from and the mean time; and
// the mean time of baton's own share of it, decoding the snapshot and
// building the input (the rest is the requests, whose time on the
// emulator grows with the session's facts: its Query sorts the whole
// partition, where DynamoDB reads one page).
func rebuild(b *testing.B, ss *session.Store, id string) (int, time.Duration, time.Duration) {
	ctx := context.Background()
	user := []reducer.Message{{ID: "m", Text: "next"}}
	var snap []byte
	began := time.Now()
	const n = 10
	for range n {
		sess, err := ss.Load(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		conversation.Build(sess.History, user, conversation.Turn{})
		snap, _ = json.Marshal(session.Snapshot{Session: id, State: sess.State, Messages: sess.History})
	}
	took := time.Since(began) / n
	began = time.Now()
	for range n {
		var sn session.Snapshot
		if err := json.Unmarshal(snap, &sn); err != nil {
			b.Fatal(err)
		}
		conversation.Build(sn.Messages, user, conversation.Turn{})
	}
	return len(snap), took, time.Since(began) / n
}

// BenchmarkStepCompactionCheck is the per-step cost of a turn of 1,000
// steps whose agent compacts past a budget it never reaches, against the
// same turn without compaction: the estimate before each step.
func BenchmarkStepCompactionCheck(b *testing.B) {
	const steps = 1000
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("compaction=%v", on), func(b *testing.B) {
			lim := turn.Limits{MaxStepsPerInvocation: steps + 1, MaxStepsPerTurn: steps + 1}
			agent := demoAgent(b, script(b, stepsScript(steps)), lim)
			if on {
				agent.Compaction = &turn.Compaction{InputTokens: 1 << 40}
			}
			inv := fresh(b, agent)
			ctx := context.Background()
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = newSession(b, inv, "go")
			}
			b.ResetTimer()
			for i := range b.N {
				if out, err := inv.runner.Start(ctx, ids[i]); err != nil || out.Kind != turn.Completed || out.Steps != steps {
					b.Fatalf("%+v %v", out, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
		})
	}
}
