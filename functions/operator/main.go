// Command operator is the operator HTTP API behind API Gateway (HTTP API,
// payload v2, JWT authorizer). The caller is the token's sub claim.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/baton-run/baton/pkg/app"
	"github.com/baton-run/baton/pkg/lambdahttp"
	"github.com/baton-run/baton/pkg/operator"
)

func main() {
	ctx := context.Background()
	a, err := app.FromOS(ctx)
	if err != nil {
		slog.Error("operator: start", "err", err)
		os.Exit(1)
	}
	h := operator.New(operator.Config{Sessions: a.Sessions, Agents: a.Agents.Has, Log: a.Log, Chat: a.Env.ChatOptions("")})
	lambda.Start(lambdahttp.Handler(h,
		lambdahttp.WithLogger(a.Log),
		lambdahttp.WithContext(func(ctx context.Context, e events.APIGatewayV2HTTPRequest) context.Context {
			if sub, ok := lambdahttp.Claim(e, "sub"); ok {
				return operator.WithIdentity(ctx, sub)
			}
			return ctx
		})))
}
