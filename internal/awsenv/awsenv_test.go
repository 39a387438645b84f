package awsenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"
)

// TestClientsRetryTransientFaults: the clients keep the SDK's standard
// retryer, which retries throttles, 5xx answers and connection errors.
func TestClientsRetryTransientFaults(t *testing.T) {
	c := ForEndpoint("http://127.0.0.1:1")
	retryers := map[string]aws.Retryer{
		"dynamodb": c.DynamoDB.Options().Retryer,
		"s3":       c.S3.Options().Retryer,
		"sqs":      c.SQS.Options().Retryer,
	}
	faults := []error{
		&smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException"},
		&smithy.GenericAPIError{Code: "ThrottlingException"},
		&smithy.GenericAPIError{Code: "SlowDown"},
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
	}
	for name, r := range retryers {
		if r == nil || r.MaxAttempts() < 3 {
			t.Fatalf("%s: retryer %v, want the standard one with 3 attempts", name, r)
		}
		for _, err := range faults {
			if !r.IsErrorRetryable(err) {
				t.Errorf("%s does not retry %v", name, err)
			}
			if !Transient(err) {
				t.Errorf("Transient(%v) = false", err)
			}
		}
		if r.IsErrorRetryable(&smithy.GenericAPIError{Code: "ValidationException"}) {
			t.Errorf("%s retries a validation error", name)
		}
	}
	for _, err := range []error{errors.New("boom"), &smithy.GenericAPIError{Code: "ConditionalCheckFailedException"},
		context.Canceled, fmt.Errorf("op: %w", context.DeadlineExceeded)} {
		if Transient(err) {
			t.Errorf("Transient(%v) = true", err)
		}
	}
}
