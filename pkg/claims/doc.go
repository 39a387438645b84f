// Package claims lets parallel sessions share an outside world without
// colliding: a side-effecting tool call declares the resources it needs
// (Claim: a namespace, an instance, a canonical key, read or write), and
// a Broker in DynamoDB admits it with a Grant, blocks it behind the grants
// it conflicts with, or holds it over its namespace's weighted capacity.
//
// Keys are never normalised: CheckKey refuses `a/../b`, `./a`, `a//b`, a
// trailing `/` and empty segments with a *KeyError, so no two spellings
// of one resource can be held at once. Two claims conflict (Conflict) when
// they share namespace and instance, one key is a path prefix of the
// other by whole segments, and one of them writes.
//
// The broker keeps one item per namespace and instance in the session
// table (its own key space, sk -3) with its grants and its queue of
// waiters, and every write is conditional on the version read; a request
// over several spaces is one TransactWriteItems. Waiters are served in
// arrival order: a later request never passes an earlier waiter it
// conflicts with, so none starves; a waiter that stops asking leaves the
// queue after WaiterTTL. Release returns the waiters nothing blocks any
// more, for the caller to wake. A grant whose execution became uncertain
// is quarantined (Quarantine) and keeps its claims whatever its deadline;
// a grant past its authorization deadline is settled by Fate (package turn
// asks the holder's facts whether its execution ever started).
//
// Claim, Static, Of, Typed and the conflict algebra are pure; Broker is
// the one part that does I/O. Package turn asks the broker around its
// execution ledger; package reducer records grants, releases, quarantines
// and blocks as session facts.
package claims
