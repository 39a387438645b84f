// Package reducer is baton's domain model: it defines the typed session
// facts, folds them into session state, and decides from that state what
// a session needs next (State.Next). Reduce, State.Apply and State.Next are pure: they read no
// clock and do no I/O, and Apply rejects an illegal sequence of facts with a
// *TransitionError instead of guessing. Among the rules it enforces: a tool
// call's execution starts again only after a rerun verdict on its newest
// execution, as the next attempt, so one verdict allows exactly one more run;
// and a resource claim's grant is released or quarantined only while the
// session holds it (claims.go; what it holds is claims.Held's, embedded
// in State).
//
// Sub-agents (children.go): a turn's tool call starts a child session
// (child.started, its id ChildID's), the turn suspends for CauseChildren,
// and the child's end is recorded once as the call's child.ended; a child
// waits with ReasonReport until it recorded child.reported. A turn that
// ends with children still running records them as Orphans in its ending
// fact, and the session waits with ReasonCascade until child.cancelled
// names each. A descendant's approval request is shown to each ancestor's
// turn as child.approval (naming the child it came through and its
// asker); the child that asked waits with ReasonShow until it recorded
// child.shown. A hand-off
// (agent.handed-off) changes the session's agent.
//
// Each fact type has its own applier (the appliers table in state.go),
// grouped by concern in a type over the state: the session's facts
// (apply_session.go), the turn's (apply_turn.go), approvals and executions
// (apply_tools.go), children (children.go) and claims (claims.go).
// State.apply checks what every fact needs and hands the fact to it.
package reducer
