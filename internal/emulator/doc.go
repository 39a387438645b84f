// Package emulator gives tests and the local dev server an AWS endpoint: the
// one in AWS_ENDPOINT_URL (LocalStack, say) when set, or kumo started
// in-process. It never fakes a service itself.
package emulator
