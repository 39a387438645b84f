// Package tick is the scheduled sweep over sessions that need attention: it
// pages the byDue index, reloads each session, and from its reduced facts
// reaps turns whose invocation died (recording the usage of the steps they
// left in the stream), denies approvals that expired, wakes
// timers that are due, posts schedules' messages, and re-sends wakes that
// were lost. It stops short of its own deadline.
package tick
