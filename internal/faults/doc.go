// Package faults is a fault-injecting http.RoundTripper for aws-sdk-go-v2
// clients in front of a real endpoint (kumo, LocalStack): rules pick
// requests by operation, URL path, body and count, and answer them with a
// DynamoDB or S3 throttle, a 500, a timeout, a response lost after the
// request reached the store, a stall (a store that does not answer), or an
// answer cut short. Tests use it to show how every durable write
// of baton behaves under store faults; README.md has the table.
package faults
