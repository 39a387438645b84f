package test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOperatorAndTickLinkNoOTelSDK checks that only the resume function
// links the OpenTelemetry SDK (providers/otel): the operator and the tick
// record a turn's trace context with package traceparent alone. And no
// function links the SDK's OTLP exporters, the generated OTLP types, grpc
// or the protobuf runtime: providers/otel writes OTLP itself, since those
// would add some 30 MB to the resume bootstrap.
func TestOperatorAndTickLinkNoOTelSDK(t *testing.T) {
	t.Parallel()
	sdk := []string{"github.com/baton-run/baton/providers/otel", "go.opentelemetry.io/otel/sdk"}
	heavy := []string{
		"go.opentelemetry.io/otel/exporters",
		"go.opentelemetry.io/proto/otlp",
		"google.golang.org/grpc",
		"google.golang.org/protobuf",
	}
	for _, fn := range []string{"operator", "tick", "resume"} {
		out, err := exec.Command("go", "list", "-deps", "../functions/"+fn).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ../functions/%s: %v\n%s", fn, err, out)
		}
		deps := strings.Fields(string(out))
		links := func(h string) bool {
			for _, p := range deps {
				if p == h || strings.HasPrefix(p, h+"/") {
					return true
				}
			}
			return false
		}
		for _, h := range heavy {
			if links(h) {
				t.Errorf("the %s function links %s", fn, h)
			}
		}
		for _, h := range sdk {
			if fn != "resume" && links(h) {
				t.Errorf("the %s function links %s", fn, h)
			}
		}
		if fn == "resume" && !links("github.com/baton-run/baton/providers/otel") {
			t.Error("the resume function does not register tracing (providers/otel)")
		}
	}
}
