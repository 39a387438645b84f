package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/turn"
)

// BenchmarkToolProgress reports the S3 PUTs of a two-step turn whose one
// tool call emits 0, 10 or 100 data parts at once (tool.Emit): the parts
// ride the live flush, so they add at most a leading and a trailing chunk
// per ProgressFlush, whatever their number.
func BenchmarkToolProgress(b *testing.B) {
	onEmulator(b) // counts requests
	for _, n := range []int{0, 10, 100} {
		b.Run(fmt.Sprintf("parts=%d", n), func(b *testing.B) {
			emit := tool.Tool{Name: "index", Description: "Index.", Effect: tool.Read, Idempotent: true,
				Schema: json.RawMessage(`{"type":"object"}`),
				Run: func(ctx context.Context, c tool.Call) (json.RawMessage, error) {
					for i := range n {
						if err := tool.Emit(ctx, tool.Data{Type: "progress", ID: "index", Data: i}); err != nil {
							return nil, err
						}
					}
					return json.RawMessage(`"indexed"`), nil
				}}
			reg, err := tool.NewRegistry(emit)
			if err != nil {
				b.Fatal(err)
			}
			agent := demoAgent(b, script(b, `{"steps":[{"text":"indexing","toolCalls":[{"name":"index","input":{}}]},{"text":"done"}]}`), turn.Limits{})
			agent.Tools = reg
			inv := fresh(b, agent)
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = newSession(b, inv, "go")
			}
			inv.counter.Reset()
			b.ResetTimer()
			for i := range b.N {
				if out, err := inv.runner.Start(context.Background(), ids[i]); err != nil || out.Kind != turn.Completed {
					b.Fatalf("%+v %v", out, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(inv.counter.Total("s3:PutObject"))/float64(b.N), "s3-puts/turn")
			b.ReportMetric(float64(inv.counter.Total(""))/float64(b.N), "requests/turn")
		})
	}
}
