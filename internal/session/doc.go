// Package session rebuilds a session from DynamoDB facts and S3 snapshots,
// and commits its transitions: every fact is checked by the reducer, then
// appended with the compare-and-set, so a transition happens whole, once, or
// not at all. A message posted while a turn is open is delivered as its
// agent's steering policy says (Store.Steering), and a compaction replaces
// the history later loads read (Store.Compact). Every ending of a turn
// records the usage of its billed steps as its stream holds them, whoever
// ends it (Store.End, Store.StreamUsage), and a raise of spend caps must
// lift the cap the turn reached (Store.Raise). Store.Delete,
// Store.FinishDelete and Store.Sweep, the end of a session's life, are
// package lifecycle's, run on the store's two stores with the store's
// hooks (lifecycle.go); a child is reported to its parent first.
// Child sessions (internal/children, wired in children.go) are created
// once (Store.CreateChild), report their end to the parent once
// (Store.Report), show their approval
// requests to it and on up to the root (Store.ShowApprovals; an answer
// given to any ancestor is routed down to the session that asked,
// Store.Answer), are cancelled when their parent's turn ends without them
// (Store.Cascade, run by every ending and, after a crash, by the parent's
// wake) and deleted with it (Store.Delete). The operator API, the chat,
// the tick and the turn runner all go through it.
//
// It is the one way into the fact log and the stream store. It declares
// the two stores it consumes, FactLog (the fact log: tail, facts since a
// seq, append with a receipt, heads by session, by owner and as the due
// index, receipts; *dynamo.Store, or internal/memstore's Log in tests) and
// StreamStore (turn streams and snapshots; *streams.Store), and New builds
// a Store on them; they are not reachable past it. Callers read through
// its methods (Facts, Head, ByOwner, Due, Receipt in read.go; OpenStream,
// ResumeStream, ReadStream, Streams, CloseStream in stream.go), and the
// sinks OpenStream and ResumeStream hand out write their chunks through
// the StreamStore too (StreamStore.WriteChunk). Decorate wraps either
// store, the seam package intercept uses for store calls. The claims
// broker (Store.Claims, a claims.Broker) is storage of its own, set on the
// store but not reached through FactLog; the store's time is Now, one
// clock.Clock the runner, the worker and the tick read too.
//
// Store is a small core with its features over it, each a type of its own
// embedded in Store, so that its methods are the store's. The core
// (session.go, retry.go) loads and commits: New, Load, Append, End,
// Compact, Follow, Clock, and the retries of a lost compare-and-set
// (LostRace and the per-session lanes), over the two stores' reads
// (read.go: Facts, Head, ByOwner, Due, Receipt), turn streams (stream.go:
// OpenStream, ResumeStream, ReadStream, Streams, CloseStream) and their
// usage (usage.go: StreamUsage). Its configuration (Config: Waker, Now,
// Steering, Log, Claims) and its two stores are each held in one struct,
// which its copies (WithReceipt, and the seam, Decorate in decorate.go)
// copy whole. The features:
//   - the operator's operations (ops.go): Create, Post, Answer, Settle,
//     Raise, SetTimer, SetSchedule, ClearSchedule, Cancel; the chat's
//     (chat.go): Converse, HasMessage; and resource claims (claims.go, wiring package
//     claimsession's rules): ReleaseGrant, and the withdrawal of a blocked
//     turn's waiter from the broker (Config.Claims) as End ends it;
//   - child sessions (internal/children's Store, over the port children.go
//     implements on the core): CreateChild, Report, Cascade, CascadeFrom,
//     ShowApprovals, ShowPending, AnswerChild;
//   - the end of a session's life (lifecycle.go, over package lifecycle,
//     and orphans.go, wiring claimsession's orphans): Delete, FinishDelete,
//     Sweep, Orphans, ReleaseOrphan;
//   - and the consumed stores (factlog.go: FactLog; streamstore.go:
//     StreamStore).
package session
