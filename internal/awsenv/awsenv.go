package awsenv

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DefaultRegion is used when neither AWS_REGION nor AWS_DEFAULT_REGION is set.
const DefaultRegion = "us-east-1"

// Clients holds one client per AWS service baton talks to.
type Clients struct {
	Config   aws.Config
	DynamoDB *dynamodb.Client
	S3       *s3.Client
	SQS      *sqs.Client
}

// ForEndpoint builds clients for an emulator at endpoint with static test
// credentials, ignoring the environment. Tests and the dev server use it.
func ForEndpoint(endpoint string) *Clients {
	cfg := aws.Config{
		Region:      DefaultRegion,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
	cfg.BaseEndpoint = aws.String(endpoint)
	return New(cfg, endpoint)
}

// Counted builds clients like ForEndpoint whose requests c counts.
func Counted(endpoint string, c *Counter) *Clients {
	cfg := aws.Config{
		Region:      DefaultRegion,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  &http.Client{Transport: c},
	}
	cfg.BaseEndpoint = aws.String(endpoint)
	return New(cfg, endpoint)
}

// New builds the service clients from cfg. A non-empty emulator endpoint
// switches on the emulator client options.
func New(cfg aws.Config, emulator string) *Clients {
	emu := emulator != ""
	return &Clients{
		Config: cfg,
		DynamoDB: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			if emu {
				o.BaseEndpoint = aws.String(emulator)
				o.DisableValidateResponseChecksum = true
			}
		}),
		S3: s3.NewFromConfig(cfg, func(o *s3.Options) {
			// Chunks are checked by their JSON; a missing checksum is noise.
			o.DisableLogOutputChecksumValidationSkipped = true
			if emu {
				o.BaseEndpoint = aws.String(emulator)
				o.UsePathStyle = true
			}
		}),
		SQS: sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			if emu {
				o.BaseEndpoint = aws.String(emulator)
			}
		}),
	}
}

// Transient reports whether err is an AWS request failure that may succeed
// if tried again later: a throttle (ProvisionedThroughputExceeded,
// ThrottlingException, SlowDown), a 5xx, a timeout or a connection error,
// an answer cut short (io.ErrUnexpectedEOF: the connection dropped while
// the response was read), or a retry quota the SDK's retryer used up on
// such failures. The end of
// the caller's own context (cancelled, or past its deadline) is not: that
// is the caller running out of time, not the store failing.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var quota ratelimit.QuotaExceededError
	if errors.As(err, &quota) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err).Bool()
}

// FromConfig returns the clients of cfg, an emulator's when
// cfg.BaseEndpoint is set (as Load does for AWS_ENDPOINT_URL).
func FromConfig(cfg aws.Config) *Clients { return New(cfg, aws.ToString(cfg.BaseEndpoint)) }
