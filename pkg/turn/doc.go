// Package turn runs an agent turn for as long as one invocation allows: it
// rebuilds the conversation and the tools the turn offers (an agent's
// remote tools are listed when the turn starts and recorded in its stream),
// calls the model and the tools step by step, checkpoints every step to the
// turn's stream (a step is written before its side effects run, and before
// its reads pass BilledGrace: the provider billed it; one that completes
// after a cancel closed the stream has its usage recorded in a
// usage.recorded fact; a step's reads start only once one read of the
// session's head found the turn still open, unless the step was written
// since the model answered: a cancel, or a cancel and a delete, stops the
// invocation before any tool or model call — fenceReads), and ends by completing, failing, or suspending the
// turn — for its budget, a spend cap (named in the suspension), an
// approval, a model or remote tools that stay throttled
// or unavailable, a throttled store, or an uncertain side effect — to be
// resumed by a fresh invocation; a tool's Fatal error fails it. Each tool
// call runs under its tool's Timeout and Retry policy (tool.Invoke), told
// of its call (tool.CallFrom). A step cut by a transient model fault is
// dropped and redone. At each step boundary it steers messages posted
// meanwhile into the turn, or ends it as interrupted, as the agent's
// steering policy decided when they were posted; and past the agent's input
// token budget it compacts the session's older history into a durable
// summary before the next step. A side effect is recorded in the
// execution ledger before it runs; one left uncertain by a crash reruns
// when idempotent, or waits for an operator's verdict, and a rerun verdict
// runs it once more as a new execution, recorded like the first. A side
// effect whose tool declares resource claims asks Runner.Claims (a
// claims.Broker) first: granted, the grant is recorded with the execution
// and released once the result is durable, waking the sessions it blocked;
// blocked, the turn suspends as blocked until a release or its poll wakes
// it (a turn ended meanwhile withdraws its waiter); an uncertain
// execution's grant is quarantined until the verdict (package
// claimsession's Calls, wired in claims.go through its port).
//
// Each invocation records the agent's fingerprint and build
// (version.go); a resume on a changed definition does what the turn's
// policy says, decided once as it starts (onchange.go): continue, fail,
// or hand the turn to the build it started on (Runner.Pins). A waiting
// call a deploy made stale never runs as it was (call.stale).
//
// The runner is a thin loop (run.loop, loop.go) over collaborators that
// own their state, each built on the invocation's shared core (core.go:
// the session, the stream, the parts folded so far, the outcome) and on
// the few others it calls: the tool ledger (ledger.go, tools.go) settles a
// step's calls and runs them under the execution ledger (settle, admit,
// runPlans, ledgered); the step (step.go, checks.go) asks the model for a
// step, translates its events into parts (stepParts), flushes them live,
// decides what a failed step means (stepFailed), and checks spend and time
// before each step (check, overSpend, fits); steering (steer.go),
// compaction (compact.go), children (children.go: the wiring of
// internal/children/spawn) and claims (claimsession.Calls, claims.go);
// and the endings (ending.go: suspend, complete, fail, stopped).
//
// An agent's Children are agents it calls as tools, each call a child
// session whose end is the call's result, the turn suspended for children
// meanwhile, and agents it may hand the session to: package
// internal/children/spawn settles them, through the port children.go
// implements over the invocation's core (spawn.Turn).
//
// Runner.Interceptors wrap each invocation's run, its model calls, tool
// calls and steps (see package intercept); with none the runner makes each
// call directly. A turn's trace context (package traceparent) is data: the
// turn.started fact records it (the posting request's, the wake's, or a
// fresh one), every invocation's Run carries it, and the wakes the runner
// sends carry it (trace.go).
package turn
