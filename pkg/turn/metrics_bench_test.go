package turn_test

import (
	"io"
	"testing"

	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/metrics"
	"github.com/baton-run/baton/pkg/reducer"
)

// BenchmarkStepMetrics is BenchmarkStep with the metrics on: the EMF
// recorder's interceptor (model calls priced, tools, steps and the fact
// log), its lines written to io.Discard, so the figure is the recording's
// own cost beside BenchmarkStep's run without it.
func BenchmarkStepMetrics(b *testing.B) {
	price := &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}
	rec := metrics.New(io.Discard, "bench")
	benchStep(b, []intercept.Interceptor{rec.Interceptor(func(intercept.ModelCall) *reducer.Price { return price })}, nil)
}
