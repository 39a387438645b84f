package awslambda

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/baton-run/baton/pkg/turn"
)

// InvokeVersion invokes the published version of function asynchronously
// (InvocationType Event: Lambda queues the event and retries it twice on
// a function error) with payload: how the resume function hands a turn
// pinned to its build to that version (turn.Pins). A version that does
// not exist (deleted, or never published) is turn.ErrBuildGone.
func (c Client) InvokeVersion(ctx context.Context, function, version string, payload []byte) error {
	_, err := c.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(function),
		Qualifier:      aws.String(version),
		InvocationType: types.InvocationTypeEvent,
		Payload:        payload,
	})
	var gone *types.ResourceNotFoundException
	if errors.As(err, &gone) {
		return fmt.Errorf("awslambda: %s version %s: %w: %w", function, version, turn.ErrBuildGone, err)
	}
	if err != nil {
		return fmt.Errorf("awslambda: invoke %s version %s: %w", function, version, err)
	}
	return nil
}
