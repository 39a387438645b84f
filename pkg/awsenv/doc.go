// Package awsenv builds aws-sdk-go-v2 clients configured the standard way
// (AWS_ENDPOINT_URL, region, credentials). When an endpoint override points at
// an emulator it applies the few client options emulators need: path-style S3
// addressing and no DynamoDB response CRC check. It also says which of their
// errors are transient (Transient) and names requests by operation (Counter).
package awsenv
