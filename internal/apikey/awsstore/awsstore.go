// Package awsstore is the apikey.Fetcher on AWS: GetSecretValue of Secrets
// Manager and GetParameter (with decryption, for a SecureString) of SSM
// Parameter Store, on aws-sdk-go-v2. Only a program that registers it
// (providers.KeyStore(), for the resume function and the dev server) links
// those two clients.
package awsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/baton-run/baton/internal/apikey"
)

// Store reads keys from Secrets Manager and SSM Parameter Store.
type Store struct {
	Secrets    *secretsmanager.Client
	Parameters *ssm.Client
}

var _ apikey.Fetcher = (*Store)(nil)

// New returns a Store on cfg (an emulator's endpoint, when cfg has one).
func New(cfg aws.Config) *Store {
	return &Store{Secrets: secretsmanager.NewFromConfig(cfg), Parameters: ssm.NewFromConfig(cfg)}
}

// Fetch implements apikey.Fetcher: a secret's current SecretString, or a
// parameter's decrypted value.
func (s *Store) Fetch(ctx context.Context, ref apikey.Ref) (string, error) {
	switch ref.Store {
	case apikey.SecretsManager:
		out, err := s.Secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(ref.ID)})
		if err != nil {
			return "", failure(ref, err)
		}
		if out.SecretString == nil {
			return "", &apikey.FetchError{Ref: ref, Permanent: true, Err: errors.New("the secret holds no SecretString (a binary secret is not a key)")}
		}
		return *out.SecretString, nil
	case apikey.ParameterStore:
		out, err := s.Parameters.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(ref.ID), WithDecryption: aws.Bool(true)})
		if err != nil {
			return "", failure(ref, err)
		}
		if out.Parameter == nil || out.Parameter.Value == nil {
			return "", &apikey.FetchError{Ref: ref, Permanent: true, Err: errors.New("the parameter has no value")}
		}
		return *out.Parameter.Value, nil
	}
	return "", &apikey.FetchError{Ref: ref, Permanent: true, Err: fmt.Errorf("unknown store %q", ref.Store)}
}

// permanent are the error codes another try will not mend: no such secret
// or parameter, no permission, a key that cannot decrypt it. Any other
// (throttling, a service fault, expired credentials) is transient.
var permanent = map[string]bool{
	"ResourceNotFoundException":     true, // Secrets Manager
	"InvalidRequestException":       true, // a secret marked for deletion
	"InvalidParameterException":     true,
	"DecryptionFailure":             true,
	"ParameterNotFound":             true, // SSM
	"ParameterVersionNotFound":      true,
	"InvalidKeyId":                  true,
	"ValidationException":           true,
	"AccessDeniedException":         true, // either, and KMS
	"UnrecognizedClientException":   true,
	"KMSAccessDeniedException":      true,
	"KMSDisabledException":          true,
	"KMSInvalidStateException":      true,
	"KMSNotFoundException":          true,
	"UnsupportedOperationException": true,
}

// failure wraps an SDK error as the Ref's FetchError.
func failure(ref apikey.Ref, err error) error {
	var api smithy.APIError
	perm := errors.As(err, &api) && permanent[api.ErrorCode()]
	return &apikey.FetchError{Ref: ref, Permanent: perm, Err: err}
}
