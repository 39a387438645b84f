// Package keystore registers baton's store of model keys, on AWS Secrets
// Manager and SSM Parameter Store, with a program:
// baton.Config{KeyStore: keystore.AWS()}. Only a program that imports it
// links those two service clients: the resume function and the dev server,
// which run models; not the operator or the tick.
package keystore

import (
	"github.com/baton-run/baton/pkg/apikey"
	"github.com/baton-run/baton/pkg/apikey/awsstore"
	"github.com/baton-run/baton/pkg/app"
	"github.com/baton-run/baton/pkg/awsenv"
)

// AWS is the key store on the app's AWS configuration (see package
// pkg/apikey/awsstore).
func AWS() app.KeyStore {
	return func(clients *awsenv.Clients) apikey.Fetcher { return awsstore.New(clients.Config) }
}
