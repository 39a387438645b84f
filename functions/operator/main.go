// Command operator is the operator HTTP API behind its two front doors: a
// Lambda Function URL with RESPONSE_STREAM (streamed answers) and API
// Gateway's HTTP API (buffered). The caller is the sub of the bearer JWT the
// function verifies itself (BATON_JWT_ISSUER, BATON_JWT_AUDIENCE).
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
		slog.Error("operator: start", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.OperatorHandler())
}
