// Package claims lets parallel sessions share an outside world without
// colliding: a side-effecting tool call declares the resources it needs
// (Claim: a namespace, an instance, a canonical key, read or write), and
// a Broker admits it with a Grant, blocks it behind the grants it
// conflicts with, or holds it over its namespace's weighted capacity. It
// is the domain package: types, rules and the Broker interface, with no
// storage and no SDK; the broker on DynamoDB is package claimsdb's Broker.
//
// Keys are never normalised: CheckKey refuses `a/../b`, `./a`, `a//b`, a
// trailing `/` and empty segments with a *KeyError, so no two spellings
// of one resource can be held at once; it refuses control characters (NUL,
// newline...) and bytes that are not UTF-8 too. A namespace and an instance
// are at most MaxNamespace bytes, with no `#` and no control character
// (Claim.Check, which CheckStatic applies as a tool is built). Two claims conflict (Conflict) when
// they share namespace and instance, one key is a path prefix of the
// other by whole segments, and one of them writes.
//
// The admission decision is Policy's, pure functions on the Spaces (one
// per namespace and instance, with its grants and its queue of waiters) a
// request touches: Admit grants a request in every space or queues it in
// every space, Free releases a grant, Withdraw takes a waiter out, and
// each returns the waiters nothing blocks any more, for the caller to
// wake. Waiters are served in arrival order: a later request never passes
// an earlier waiter it conflicts with (under a capacity, any earlier
// waiter), so none starves; a waiter that stops asking leaves the queue
// after WaiterTTL, and one whose turn ended is withdrawn before that. A
// grant whose execution became uncertain is quarantined and keeps its
// claims whatever its deadline; a blocking grant past its authorization
// deadline is settled by the broker's Fate (claimsession.Fate asks the
// holder's facts whether its execution ever started).
//
// What a session holds is Held (package reducer folds the claim facts
// into it, and embeds it in its State), with Block, what a blocked call
// waits for. The feature's other parts are subpackages: claimsdb is the
// Broker on DynamoDB, and claimsession is claims over a session's facts
// (the runner's calls, the store's withdrawals and orphans, the broker's
// Fate, the operator's views), which packages turn, session and operator
// wire in.
package claims
