// Package teststack builds baton's parts for the project's own tests, on
// an internal/testenv Env (the emulator) or in memory (Memory: the stores
// of internal/memstore on a clock the test moves), and holds the helpers
// those tests share: a session store, the scripted demo agent, a session
// with a waiting message, and readers of facts, parts and wakes.
package teststack
