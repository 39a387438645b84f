// Package app wires baton together from its environment: AWS clients,
// the session store, the agents (the agent file's, plus any tools and agents
// a Go program adds), the runner and the waker. The three Lambda functions
// and the local dev server build the same App, so they cannot drift apart.
package app
