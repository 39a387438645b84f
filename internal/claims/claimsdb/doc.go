// Package claimsdb is the resource claims broker (claims.Broker) on the
// session table: one item per claims space and one orphan list per owner,
// in a key space of their own (schema.go; the table's keys are package
// dynamo's), each write conditional on the version read and several items
// in one transaction. Package claims decides; the broker reads, asks its
// Policy and writes back.
package claimsdb
