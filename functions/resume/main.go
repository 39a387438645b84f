// Command resume runs turns. SQS wakes trigger it; it decides from the
// session's facts whether to start, resume or do nothing, and reports
// batch item failures for redelivery.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/baton-run/baton/pkg/app"
	"github.com/baton-run/baton/pkg/worker"
)

func main() {
	ctx := context.Background()
	a, err := app.FromOS(ctx)
	if err != nil {
		slog.Error("resume: start", "err", err)
		os.Exit(1)
	}
	w := &worker.Worker{Sessions: a.Sessions, Runner: a.Runner, Log: a.Log}
	lambda.Start(w.HandleSQS)
}
