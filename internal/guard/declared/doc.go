// Package declared builds the guardrails an agent file declares: a list
// of patterns, a maximum length, or a remote checker (an HTTP endpoint or
// a Lambda function posted the checked text, answering a decision).
package declared
