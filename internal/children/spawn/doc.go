// Package spawn is the runner's side of sub-agents and hand-offs: the
// tools Link adds for an agent's Children, the settling of a step's
// sub-agent calls and hand-off (Kids: Admit, Settle), the report of a
// child's ended turn to its parent, and an invocation's check that its
// parent still waits for it (Orphaned). Package turn drives it through the
// narrow port Turn, and it reaches the session store through Sessions.
package spawn
