package awsstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/apikey/awsstore"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
)

// TestStoreReadsSecretsManagerOnKumo fetches a secret by name and by ARN
// from kumo's Secrets Manager, then its rotated value.
func TestStoreReadsSecretsManagerOnKumo(t *testing.T) {
	ctx := context.Background()
	s := awsstore.New(testenv.Emulator().Clients.Config)
	name := "baton/test/" + ids.New("k")
	out, err := s.Secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(" sk-one\n")})
	if err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	for _, id := range []string{name, aws.ToString(out.ARN)} {
		ref, err := apikey.ParseRef(id)
		if err != nil {
			t.Fatal(err)
		}
		if ref.Store != apikey.SecretsManager {
			t.Fatalf("ParseRef(%q).Store = %q", id, ref.Store)
		}
		got, err := s.Fetch(ctx, ref)
		if err != nil || got != " sk-one\n" {
			t.Fatalf("Fetch(%s) = %q, %v; want the stored string", id, got, err)
		}
	}
	if _, err := s.Secrets.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(name), SecretString: aws.String("sk-two")}); err != nil {
		t.Fatalf("PutSecretValue: %v", err)
	}
	if got, err := s.Fetch(ctx, apikey.Ref{Store: apikey.SecretsManager, ID: name}); err != nil || got != "sk-two" {
		t.Fatalf("after rotation Fetch = %q, %v; want sk-two", got, err)
	}
}

// TestStoreReadsParameterStoreOnKumo fetches a SecureString parameter from
// kumo's SSM by ssm:<name>, then its overwritten value.
func TestStoreReadsParameterStoreOnKumo(t *testing.T) {
	ctx := context.Background()
	s := awsstore.New(testenv.Emulator().Clients.Config)
	name := "/baton/test/" + ids.New("k")
	put := func(v string) {
		t.Helper()
		if _, err := s.Parameters.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(v),
			Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatalf("PutParameter: %v", err)
		}
	}
	put("sk-one")
	ref, err := apikey.ParseRef("ssm:" + name)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Fetch(ctx, ref); err != nil || got != "sk-one" {
		t.Fatalf("Fetch = %q, %v; want sk-one", got, err)
	}
	put("sk-two")
	if got, err := s.Fetch(ctx, ref); err != nil || got != "sk-two" {
		t.Fatalf("after overwrite Fetch = %q, %v; want sk-two", got, err)
	}
	// By ARN (the template's parameters name one) the store sends the ARN
	// as GetParameter's Name, which SSM takes (and needs for a parameter
	// shared from another account); kumo v0.33.1 finds parameters by name
	// only, so that path is not run here.
}

// TestStoreMissingIsPermanent checks that a secret or parameter that does
// not exist is a permanent FetchError naming the Ref.
func TestStoreMissingIsPermanent(t *testing.T) {
	ctx := context.Background()
	s := awsstore.New(testenv.Emulator().Clients.Config)
	for _, ref := range []apikey.Ref{
		{Store: apikey.SecretsManager, ID: "baton/none/" + ids.New("k")},
		{Store: apikey.ParameterStore, ID: "/baton/none/" + ids.New("k")},
	} {
		_, err := s.Fetch(ctx, ref)
		var fe *apikey.FetchError
		if !errors.As(err, &fe) || !fe.Permanent || fe.Ref != ref {
			t.Errorf("Fetch(%s) = %v; want a permanent FetchError naming it", ref, err)
		}
	}
}
