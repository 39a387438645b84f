// Package console serves baton's web console: a static page of HTML, CSS
// and JavaScript, embedded in the binary, that lists an operator's sessions
// and shows one session's usage, live turn, approvals, uncertain executions
// and facts, with the operator's actions on them (spend caps, timers and
// the schedule among them). It holds no data: the page calls the operator
// API as any other caller does, with the same identity.
package console
