// Package batontest runs a program's baton agents in its tests, on real
// AWS parts: it starts the emulator in-process (or uses AWS_ENDPOINT_URL),
// creates the table, bucket and queues of baton.Template, and builds the
// App from the program's host.Config as a deployed function does. A
// Session then posts messages, runs invocations through the real resume
// worker (whole, or killed part way), its child sessions' with them as the
// deployed wakes would (Run; RunAlone steps one session by hand), says
// what a session waits for when a Run had nothing to do (Outcome.Idle),
// answers approvals and verdicts, and reads back the facts, stream parts
// and tool calls to assert on; Script and Record give the agent a
// scripted model and show what it was sent. Replay runs an exported
// session (Session.Export, or a golden file of `baton export`) again
// against the program's agent and fails the test on each divergence.
package batontest
