// Package awsconfig builds baton's AWS clients with the AWS SDK's full
// configuration chain: shared config and credentials files, profiles, SSO,
// web identity, container and instance credentials. The CLI and programs
// that run outside Lambda use it (with host.NewOn); a Lambda function
// does not need it, and its bootstrap does not link it: host.New reads
// the function's environment (awsenv.FromEnv).
package awsconfig

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/baton-run/baton/internal/awsenv"
)

// Load reads the standard configuration chain. When AWS_ENDPOINT_URL is set
// and no credentials are configured, static test credentials are used, since
// emulators accept any.
func Load(ctx context.Context, opts ...func(*config.LoadOptions) error) (*awsenv.Clients, error) {
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	all := []func(*config.LoadOptions) error{}
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		all = append(all, config.WithRegion(awsenv.DefaultRegion))
	}
	if endpoint != "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		all = append(all, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	all = append(all, opts...)
	cfg, err := config.LoadDefaultConfig(ctx, all...)
	if err != nil {
		return nil, fmt.Errorf("awsconfig: load config: %w", err)
	}
	return awsenv.New(cfg, endpoint), nil
}
