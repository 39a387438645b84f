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

	"github.com/aws/aws-lambda-go/lambda"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/providers"
	"github.com/baton-run/baton/providers/otel"
)

func main() {
	ctx := context.Background()
	cfg := baton.Config{Tools: baton.DemoTools(), Providers: providers.All(), MCP: providers.MCP()}
	tracing, err := otel.FromEnv(ctx, os.Getenv)
	if err != nil {
		slog.Error("resume: tracing", "err", err)
		os.Exit(1)
	}
	if tracing != nil {
		cfg.Interceptors = append(cfg.Interceptors, tracing.Interceptor())
	}
	app, err := baton.New(ctx, cfg)
	if err != nil {
		slog.Error("resume: start", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.ResumeHandler())
}
