// Package retry runs an operation again after a lost race or a transient
// store error, within a bounded Policy: a number of attempts and/or a total
// time, with full-jitter exponential backoff between tries, honouring the
// context. It is the one retry loop of baton's stores and runner.
package retry
