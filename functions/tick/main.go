// Command tick runs on an EventBridge schedule: it reaps turns whose
// invocation died, denies expired approvals and re-sends lost wakes.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	baton "github.com/baton-run/baton"
)

func main() {
	app, err := baton.New(context.Background(), baton.Config{Tools: baton.DemoTools(), Metrics: os.Stderr})
	if err != nil {
		slog.Error("tick: start", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.TickHandler())
}
