// Package awsenv builds aws-sdk-go-v2 clients: FromEnv from a Lambda
// function's environment (AWS_ENDPOINT_URL, region, credentials), linking
// none of the SDK's shared-config and credential-chain code; package
// awsconfig has that full chain, for the CLI and programs outside Lambda. When an endpoint override points at
// an emulator it applies the few client options emulators need: path-style S3
// addressing and no DynamoDB response CRC check. It also says which of their
// errors are transient (Transient) and names requests by operation (Counter).
package awsenv
