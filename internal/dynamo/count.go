package dynamo

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts the requests sent by the AWS SDK clients or operations it is
// attached to, one per HTTP attempt (retries included). The zero value is
// ready to use and safe for concurrent use. Its middleware works with any
// aws-sdk-go-v2 client (add Middleware to the client's APIOptions), so other
// packages can count their S3 or SQS requests the same way.
type Counter struct {
	n atomic.Int64
}

// Count returns the number of requests counted so far.
func (c *Counter) Count() int64 { return c.n.Load() }

// Middleware returns an APIOptions entry that counts every attempt. It sits
// after the retry middleware, so each retry is counted too.
func (c *Counter) Middleware() func(*middleware.Stack) error {
	id := fmt.Sprintf("baton.count.%p", c)
	return func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc(id,
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c.n.Add(1)
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// DynamoDB is a per-operation (or client) option that attaches the counter.
func (c *Counter) DynamoDB(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, c.Middleware())
}
