// Package devserver runs baton on one machine: an AWS endpoint (kumo
// in-process, or AWS_ENDPOINT_URL), the resources from template.yaml, the
// operator API on a local address, the resume worker polling SQS as an
// event source mapping would, and the tick on an interval.
package devserver
