// Package tick is the scheduled sweep over sessions that need attention: it
// reads the byDue index's shards (dynamo.DueShards, all at once, each paged
// by due time so that heads moved meanwhile skip nothing), reloads each
// session, and from its reduced facts reaps turns whose invocation died
// (recording the usage of the steps they left in the stream), denies
// approvals that expired, wakes timers that are due, posts schedules'
// messages, re-sends wakes that were lost (once per grace, recorded on the
// head first: dynamo.Store.Rewoke), and finishes the deletes that waited for
// a cancelled invocation's lease (dynamo.WhyPurge), sending its wakes ten a
// request. It stops short of its own deadline; the index is its
// continuation. Retention is the daily retention sweep the same function runs on
// its other schedule (Scheduled tells the two events apart).
package tick
