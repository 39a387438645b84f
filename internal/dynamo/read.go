package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/retry"
)

// readPolicy bounds how often a read is sent again after a transient
// failure the SDK's retryer let through: a throttle that outlasted its
// attempts, or an answer cut short (the SDK does not retry a response body
// that ends early). Like Append's resends, this keeps a store fault within
// the invocation instead of failing it and waiting out a redelivery. Reads
// change nothing, so sending one again is always safe.
var readPolicy = retry.Policy{Attempts: maxResend + 1, Base: 10 * time.Millisecond, Max: 100 * time.Millisecond}

// reader sends the store's reads, again after a transient failure. It
// holds the client and the per-call options (the request counter, when one
// is set) that every request of the store uses.
type reader struct {
	client *dynamodb.Client
	count  []func(*dynamodb.Options)
}

// getItem sends in, again after a transient failure (see readPolicy).
func (s *reader) getItem(ctx context.Context, in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
	var out *dynamodb.GetItemOutput
	err := retry.Do(ctx, readPolicy, func() error {
		var err error
		out, err = s.client.GetItem(ctx, in, s.count...)
		return err
	}, awsenv.Transient)
	return out, err
}

// query sends in, again after a transient failure (see readPolicy).
func (s *reader) query(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	var out *dynamodb.QueryOutput
	err := retry.Do(ctx, readPolicy, func() error {
		var err error
		out, err = s.client.Query(ctx, in, s.count...)
		return err
	}, awsenv.Transient)
	return out, err
}
