// Package callback lets a tool call be finished by a system outside
// baton: the tool is handed a token (Open), gives it away and returns
// ErrPending, and the turn waits until someone presents the token with a
// result, or its Policy's timeout or heartbeat timeout passes. It holds
// the domain types and rules (the token, the policy, the record of one
// callback and its deadline) with no storage; package reducer folds the
// records into a turn's state, and the runner and the session store act
// on them.
package callback
