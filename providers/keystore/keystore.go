// Package keystore registers baton's store of model keys, on AWS Secrets
// Manager and SSM Parameter Store, with a program:
// host.Config{KeyStore: keystore.AWS()}. Only a program that imports it
// links those two service clients: the resume function and the dev server,
// which run models; not the operator or the tick.
package keystore

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/apikey/awsstore"
	"github.com/baton-run/baton/internal/app"
)

// AWS is the key store on the app's AWS configuration (see package
// internal/apikey/awsstore).
func AWS() app.KeyStore {
	return func(cfg aws.Config) apikey.Fetcher { return awsstore.New(cfg) }
}
