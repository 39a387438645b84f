// Command resume runs turns. SQS wakes trigger it; it decides from the
// session's facts whether to start, resume or do nothing, and reports
// batch item failures for redelivery. With an OTLP endpoint configured
// (OTEL_EXPORTER_OTLP_ENDPOINT, as the template's Tracing=adot sets it),
// it traces every turn (package providers/otel).
package main

import (
	"context"
	"log/slog"
	"os"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/providers"
	"github.com/baton-run/baton/providers/otel"
)

func main() {
	cfg := host.Config{Tools: baton.DemoTools(), Metrics: os.Stderr, Providers: providers.All(), MCP: providers.MCP(), KeyStore: providers.KeyStore(), Lambda: providers.Lambda()}
	// Turns are traced (OpenTelemetry) when an OTLP endpoint is set, as
	// the template's Tracing=adot sets it.
	tracing, err := otel.FromEnv(context.Background(), os.Getenv)
	if err != nil {
		slog.Error("resume: tracing", "err", err)
		os.Exit(1)
	}
	if tracing != nil {
		cfg.Interceptors = append(cfg.Interceptors, tracing.Interceptor())
	}
	host.Main(host.ResumeFunction, cfg)
}
