// Command operator is the operator HTTP API behind API Gateway (HTTP API,
// payload v2, JWT authorizer). The caller is the token's sub claim.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	baton "github.com/baton-run/baton"
)

func main() {
	app, err := baton.New(context.Background(), baton.Config{Tools: baton.DemoTools()})
	if err != nil {
		slog.Error("operator: start", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.OperatorHandler())
}
