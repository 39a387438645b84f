// Package turntest holds cross-package tests and nothing else: a turn run by
// pkg/turn on each real provider (anthropic, openai, bedrock), against a
// local server replaying realistic streaming wire traffic, through a
// suspension for approval and a resumption in a fresh invocation, checking
// that the conversation the runner rebuilds is what each provider's API
// expects, and through a server that misbehaves (5xx, 529, dropped
// connections, cut streams, corrupt events, a 401). See the *_test.go files.
package turntest
