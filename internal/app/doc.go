// Package app wires baton together from its environment: AWS clients,
// the session store, the agents (the agent file's, plus any tools and agents
// a Go program adds), the runner and the waker, and the parts the programs
// run from it (the worker, the tick, the operator API). The three Lambda
// functions and the local dev server build the same App and parts, so they
// cannot drift apart.
package app
