// Package replay runs a recorded session (an api.Export: its facts and turn
// streams) again against an agent, on storage in memory: each recorded turn
// is posted and run by the real runner, with the recording as the model
// (each step answers what the recorded step did) and the recorded results
// as the tools' (no tool touches the world), and the recorded approvals'
// answers applied again. It compares the replayed turns with the recorded
// ones and reports each divergence (package report); batontest and `baton
// replay` share it.
package replay
