// Package teststack builds baton's parts on an internal/testenv Env for the
// project's own tests, and holds the helpers those tests share: a session
// store on the Env, the scripted demo agent, a session with a waiting
// message, and readers of facts, parts and wakes.
package teststack
