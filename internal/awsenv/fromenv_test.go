package awsenv

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// TestFromEnv reads a Lambda function's environment: region, the execution
// role's credentials, an emulator's endpoint and the retry settings.
func TestFromEnv(t *testing.T) {
	unset := func(t *testing.T) {
		for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
			"AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE", "AWS_PROFILE"} {
			t.Setenv(k, "")
		}
	}
	t.Run("lambda", func(t *testing.T) {
		unset(t)
		t.Setenv("AWS_REGION", "eu-west-1")
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIA1")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
		t.Setenv("AWS_SESSION_TOKEN", "tok")
		t.Setenv("AWS_MAX_ATTEMPTS", "5")
		t.Setenv("AWS_RETRY_MODE", "adaptive")
		c, err := FromEnv()
		if err != nil {
			t.Fatal(err)
		}
		creds, err := c.Config.Credentials.Retrieve(context.Background())
		if err != nil || creds.AccessKeyID != "AKIA1" || creds.SecretAccessKey != "s3cret" || creds.SessionToken != "tok" {
			t.Errorf("credentials %+v, %v", creds, err)
		}
		if c.Config.Region != "eu-west-1" || c.Config.RetryMaxAttempts != 5 || c.Config.RetryMode != aws.RetryModeAdaptive || c.Config.BaseEndpoint != nil {
			t.Errorf("config: region %q attempts %d mode %q endpoint %v", c.Config.Region, c.Config.RetryMaxAttempts, c.Config.RetryMode, c.Config.BaseEndpoint)
		}
		if c.DynamoDB.Options().Region != "eu-west-1" || c.S3 == nil || c.SQS == nil {
			t.Errorf("clients not built on the config")
		}
	})
	t.Run("emulator", func(t *testing.T) {
		unset(t)
		t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
		c, err := FromEnv()
		if err != nil {
			t.Fatal(err)
		}
		creds, _ := c.Config.Credentials.Retrieve(context.Background())
		if creds.AccessKeyID != "test" || c.Config.Region != DefaultRegion || aws.ToString(c.Config.BaseEndpoint) != "http://127.0.0.1:4566" {
			t.Errorf("credentials %q, region %q, endpoint %v", creds.AccessKeyID, c.Config.Region, c.Config.BaseEndpoint)
		}
		if !c.S3.Options().UsePathStyle {
			t.Errorf("S3 is not path-style for the emulator")
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		unset(t)
		t.Setenv("AWS_PROFILE", "dev")
		if _, err := FromEnv(); !errors.Is(err, ErrNoCredentials) {
			t.Fatalf("err = %v, want ErrNoCredentials", err)
		}
	})
	t.Run("bad retry settings", func(t *testing.T) {
		for k, v := range map[string]string{"AWS_MAX_ATTEMPTS": "many", "AWS_RETRY_MODE": "sometimes"} {
			unset(t)
			t.Setenv("AWS_ACCESS_KEY_ID", "a")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "b")
			t.Setenv(k, v)
			if _, err := FromEnv(); err == nil {
				t.Errorf("%s=%s accepted", k, v)
			}
		}
	})
}
