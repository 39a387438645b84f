// Package worker is the resume function's logic: it takes SQS wakes, reloads
// the session they name, and starts, resumes or takes over its turn when the
// reduced facts say one is due — never because the message says so, so late
// and duplicate wakes change nothing. A wake for a session that does not
// exist, or was deleted while it was handled, is dropped. Poll stands in for Lambda's SQS event
// source mapping in the local dev server and in tests.
package worker
