// Command resume runs turns. SQS wakes trigger it; it decides from the
// session's facts whether to start, resume or do nothing, and reports
// batch item failures for redelivery.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/providers"
)

func main() {
	app, err := baton.New(context.Background(), baton.Config{Tools: baton.DemoTools(), Providers: providers.All(), MCP: providers.MCP(), Lambda: providers.Lambda()})
	if err != nil {
		slog.Error("resume: start", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.ResumeHandler())
}
