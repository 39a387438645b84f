// Command tick runs on an EventBridge schedule: it reaps turns whose
// invocation died, denies expired approvals and re-sends lost wakes.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/baton-run/baton/pkg/app"
	"github.com/baton-run/baton/pkg/tick"
)

func main() {
	ctx := context.Background()
	a, err := app.FromOS(ctx)
	if err != nil {
		slog.Error("tick: start", "err", err)
		os.Exit(1)
	}
	t := &tick.Tick{Sessions: a.Sessions, Waker: a.Waker, Grace: a.Env.WakeGrace, Log: a.Log}
	lambda.Start(t.HandleScheduled)
}
