// Package console serves baton's web console: a static page of HTML, CSS
// and JavaScript, embedded in the binary, that lists an operator's sessions
// and shows one session's live turn, approvals, uncertain executions and
// facts. It holds no data: the page calls the operator API as any other
// caller does, with the same identity.
package console
