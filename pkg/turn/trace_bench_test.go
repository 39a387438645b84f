package turn_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/providers/otel"
)

// BenchmarkStepTraced is BenchmarkStep with tracing on (providers/otel):
// every run, step, model call and tool call a span, batched and exported
// over OTLP/HTTP to an in-process receiver at the end of each run, the
// export inside the timed turn. Beside BenchmarkStep (tracing off: no
// interceptor, the runner calls directly) it is what tracing costs a step.
func BenchmarkStepTraced(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	tr := otel.New(otel.NewExporter(srv.URL+"/v1/traces", nil))
	defer func() { _ = tr.Shutdown(b.Context()) }()
	benchStep(b, []intercept.Interceptor{tr.Interceptor()}, nil)
}
