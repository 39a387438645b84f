// Package app wires baton together: from a program's Config (its Go
// agents, checked once by agentspec, and the tools, providers and clients
// it registers) and the Resources it runs on (read from a deployed
// function's environment by EnvFrom, the one place that reads baton's
// settings, or given by the program), it builds the AWS clients, the
// session store, the agents, the runner and the waker, and the parts the
// programs run (the worker, the tick, the operator API). Package host
// re-exports Config and Resources and gives the three Lambda functions'
// handlers; the dev server and batontest build the same App, so they
// cannot drift apart.
package app
