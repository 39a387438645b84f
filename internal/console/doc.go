// Package console serves baton's web console: a static page of HTML, CSS
// and JavaScript, embedded in the binary, that lists an operator's sessions
// (searched and filtered in the page, from the listing alone) and shows one
// session's usage, every turn (the latest live), approvals, uncertain
// executions and facts, with each fact's and stream part's raw JSON and a
// waterfall of the step times that each step's message-metadata carries
// (model time, tool time and checkpoint, each its own segment),
// and the operator's actions (spend caps, timers and the schedule among
// them). It holds no data: the page calls the operator API as any other
// caller does, with the same identity. Its Content Security Policy allows
// no inline script or style; every control is labelled, and status and
// streamed text are aria-live.
package console
