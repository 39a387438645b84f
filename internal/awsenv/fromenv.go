package awsenv

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// ErrNoCredentials is FromEnv's error for an environment with no AWS
// credentials in it.
var ErrNoCredentials = errors.New("awsenv: no AWS credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY): " +
	"a Lambda function has them; elsewhere build the clients with package awsenv/awsconfig (the SDK's full chain) and call host.NewOn")

// FromEnv builds the clients from the process environment alone, as a
// Lambda function has it: the region in AWS_REGION (or AWS_DEFAULT_REGION;
// default DefaultRegion), the execution role's credentials in
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, an
// emulator in AWS_ENDPOINT_URL (with static test credentials when no keys
// are set), and AWS_MAX_ATTEMPTS and AWS_RETRY_MODE. These are what the
// SDK's default chain reads inside Lambda; FromEnv links none of the rest
// of it (shared config files, profiles, SSO, STS, instance metadata), over
// a megabyte of each bootstrap. Package awsenv/awsconfig has the full
// chain.
func FromEnv() (*Clients, error) {
	cfg := aws.Config{Region: os.Getenv("AWS_REGION")}
	if cfg.Region == "" {
		cfg.Region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	switch {
	case key != "" && secret != "":
		cfg.Credentials = credentials.NewStaticCredentialsProvider(key, secret, os.Getenv("AWS_SESSION_TOKEN"))
	case endpoint != "" && key == "":
		cfg.Credentials = credentials.NewStaticCredentialsProvider("test", "test", "")
	default:
		return nil, ErrNoCredentials
	}
	if endpoint != "" {
		cfg.BaseEndpoint = aws.String(endpoint)
	}
	if v := os.Getenv("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("awsenv: AWS_MAX_ATTEMPTS %q: want a positive integer", v)
		}
		cfg.RetryMaxAttempts = n
	}
	if v := os.Getenv("AWS_RETRY_MODE"); v != "" {
		m, err := aws.ParseRetryMode(v)
		if err != nil {
			return nil, fmt.Errorf("awsenv: AWS_RETRY_MODE: %w", err)
		}
		cfg.RetryMode = m
	}
	return New(cfg, endpoint), nil
}
