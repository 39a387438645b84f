// Package apikey gives a model provider its API key from a secret store:
// AWS Secrets Manager or SSM Parameter Store (a SecureString), named by a
// Ref. A Cache fetches each key once per process (a Lambda container) and
// fetches it again only when a provider refuses it; Model wraps a
// provider's model so that a call the provider refuses for auth (a 401 or
// 403, model.Auth as package provider classifies it) fetches the key once
// more and, when it changed (rotated), redoes the call with the new key.
//
// A Ref is written as:
//
//   - an ARN: arn:aws:secretsmanager:<region>:<account>:secret:<name>-<suffix>
//     for a secret, arn:aws:ssm:<region>:<account>:parameter/<name> for a
//     parameter;
//   - ssm:<name>, such as ssm:/baton/anthropic-key, for a parameter by name;
//   - anything else is a Secrets Manager secret's name.
//
// A secret's SecretString, or a parameter's value, is the key itself,
// whitespace around it trimmed.
//
// The package links no AWS service client: the Fetcher that reaches the
// stores is the program's to register (package apikey/awsstore, through
// providers.KeyStore()), so a function that runs no model links none.
// A key is never logged and never part of an error: errors name the Ref,
// and a provider's error that quotes the key has it replaced.
package apikey
