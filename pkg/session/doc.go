// Package session rebuilds a session from DynamoDB facts and S3 snapshots,
// and commits its transitions: every fact is checked by the reducer, then
// appended with the compare-and-set, so a transition happens whole, once, or
// not at all. The operator API and the turn runner both go through it.
package session
