// Package awslambda registers baton's invoker of lambda tools (an agent
// file's tools of kind "lambda"), on the AWS SDK's Lambda client, with a
// program: host.Config{Lambda: awslambda.Invoker()}. Only a program that
// imports it links the Lambda client: the resume function, which runs
// tools; the operator and the tick do not.
package awslambda

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/tool/remote"
)

// Invoker is baton's invoker of lambda tools, on a Lambda client made from
// the app's AWS config.
func Invoker() app.Lambda {
	return func(cfg aws.Config) remote.LambdaInvoker { return Client{lambda.NewFromConfig(cfg)} }
}

// Client invokes functions with an AWS SDK Lambda client.
type Client struct{ *lambda.Client }

// InvokeLambda invokes function synchronously with payload. An error is
// the SDK's, which names the operation (errors.As finds its type, such as
// *types.ResourceNotFoundException). One the SDK itself retries
// (throttling, a service fault: ones it judges safe to send again), once
// its own retries are spent, is a tool.Transient error, for the tool's
// Retry policy.
func (c Client) InvokeLambda(ctx context.Context, function string, payload []byte) (remote.LambdaResult, error) {
	out, err := c.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(function),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        payload,
	})
	if err != nil {
		if retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err).Bool() {
			return remote.LambdaResult{}, &tool.Error{Kind: tool.Transient, Err: err}
		}
		return remote.LambdaResult{}, err
	}
	return remote.LambdaResult{Payload: out.Payload, FunctionError: aws.ToString(out.FunctionError)}, nil
}
