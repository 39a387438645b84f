package replay_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/replay"
)

// BenchmarkReplayTurn replays a recorded session of 20 turns of four
// steps each (three read calls and an answer) against its own agent, in
// memory; ms/turn is the replay's time per recorded turn.
func BenchmarkReplayTurn(b *testing.B) {
	var sent atomic.Int64
	r := newRig(b, mailAgents(b, &sent, baton.Limits{}))
	const turns = 20
	for i := range turns {
		r.post(b, "s_bench", "mail", fmt.Sprintf("three, please (%d)", i))
	}
	exp := r.export(b, "s_bench")
	agents := mailAgents(b, &sent, baton.Limits{})
	start := time.Now()
	for b.Loop() {
		rep, err := replay.Run(b.Context(), exp, agents, replay.Options{})
		if err != nil || rep.Failed() || len(rep.Turns) != turns {
			b.Fatalf("%v, report:\n%s", err, rep)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N*turns), "ms/turn")
}
