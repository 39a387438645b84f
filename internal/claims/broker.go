package claims

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Broker admits requests for claims against the grants held, and keeps the
// queues of the requests it blocks. Its state is shared by every
// invocation of every session (package claimsdb keeps it in the session
// table), so an implementation is safe for concurrent use, also across
// processes; the admission rules themselves are Policy's (space.go).
//
// Every method that writes either changes every space it touches or none,
// and a call that keeps losing to concurrent writers gives up with an error
// matching ErrRaced (asking again is safe). Any other error is the
// storage's, wrapped.
type Broker interface {
	// Acquire asks for req's claims. Granted: the grant, recorded in every
	// space the claims touch (a request whose ID is already granted gets
	// its grant again, out of quarantine and with req's deadline). Blocked
	// or over capacity: req waits in the queue of each of those spaces,
	// keeping its first place when it asks again, and the admission names
	// the grants in its way and the earlier waiters ahead of it. A blocking
	// grant past its deadline is first settled by the implementation's
	// Fate, if it has one. Claims that are missing or invalid (ErrInvalid)
	// or heavier than their namespace's capacity (ErrTooHeavy) are
	// refused, and nothing is read or written.
	Acquire(ctx context.Context, req Request) (Admission, error)
	// Admissible reports whether req would be granted now, writing
	// nothing: a blocked caller asks it once its suspension is durable,
	// since a release between its Acquire and then found it still running
	// and its wake did nothing.
	Admissible(ctx context.Context, req Request) (bool, error)
	// Release frees grant g (its ID, in the spaces of its claims) and
	// returns the waiters that nothing blocks any more, first come first,
	// for the caller to wake. Releasing a grant no longer held changes
	// nothing, and still returns the waiters that are free.
	Release(ctx context.Context, g Grant) ([]Waiter, error)
	// Withdraw takes the waiter req.ID out of the queues of the spaces of
	// req.Claims (the rest of req is not read): its request will not ask
	// again (its turn was cancelled or ended). It returns the waiters
	// nothing blocks any more, for the caller to wake, as Release does.
	// Withdrawing a request that waits nowhere changes nothing. A waiter
	// never withdrawn (its caller crashed) leaves after the waiter TTL.
	Withdraw(ctx context.Context, req Request) ([]Waiter, error)
	// Quarantine marks grant g quarantined: it keeps its claims, and no
	// deadline frees it until it is acquired again or released. A grant no
	// longer held is left alone.
	Quarantine(ctx context.Context, g Grant) error
	// Orphan quarantines grant g for good and lists it among the orphans
	// of g.Owner, in one write: its holder is gone (its session was
	// deleted, or was never found), so nothing but ReleaseOrphan frees it,
	// whatever its deadline or Fate says. A grant no longer held is left
	// alone; orphaning one already orphaned changes nothing.
	Orphan(ctx context.Context, g Grant) error
	// Orphans lists owner's orphaned grants, oldest first.
	Orphans(ctx context.Context, owner string) ([]Grant, error)
	// ReleaseOrphan frees owner's orphaned grant grantID (an operator says
	// its effect is over) and returns the waiters nothing blocks any more,
	// as Release does. A grant that is not an orphan of owner fails with
	// ErrNotOrphan, and nothing is written.
	ReleaseOrphan(ctx context.Context, owner, grantID string) ([]Waiter, error)
	// Grants lists the grants held and the waiters queued in space k, for
	// views and tests; an unused space has none.
	Grants(ctx context.Context, k SpaceKey) ([]Grant, []Waiter, error)
	// PollEvery is how long a blocked turn waits before it asks again,
	// even without a release's wake; it is shorter than the waiter TTL, so
	// a waiting turn keeps its place.
	PollEvery() time.Duration
}

// Defaults.
const (
	// DefaultWaiterTTL is how long a waiter keeps its place without asking
	// again: a blocked turn asks at least every DefaultPoll, so a waiter
	// whose turn ended without withdrawing it (its invocation crashed)
	// blocks no one for longer than this.
	DefaultWaiterTTL = 2 * time.Minute
	// DefaultPoll is how long a blocked turn sleeps before it asks again
	// even without a release's wake.
	DefaultPoll = 30 * time.Second
)

// ErrRaced is matched when a broker call lost to concurrent writers too
// many times in a row; nothing of it was written, and asking again is safe.
var ErrRaced = errors.New("claims: too many concurrent writers; try again")

// ErrNotOrphan is matched when a grant to release as an orphan is not one
// of the owner's orphaned grants (another owner's, released already, or
// never orphaned).
var ErrNotOrphan = errors.New("claims: not an orphaned grant of the owner")

// ErrTooHeavy is matched when a request weighs more than its namespace's
// whole capacity: it could never be granted, so it is refused, not queued.
var ErrTooHeavy = errors.New("claims: the claims weigh more than the namespace's capacity")

// Fate is what becomes of a grant past its authorization deadline that
// blocks a request.
type Fate int

// Fates.
const (
	// Keep: its execution may be running or may have ended without the
	// release being recorded yet; it stays held.
	Keep Fate = iota
	// Release: its execution never started; it is released.
	Release
	// Quarantine: its execution started and its invocation is gone; it
	// keeps its claims until an operator's verdict.
	Quarantine
	// Orphan: its holder is gone (its session was deleted, or none was
	// ever found), so nothing says its effect is over; it is orphaned
	// (Broker.Orphan) and keeps its claims until an operator releases it
	// (Broker.ReleaseOrphan). A missing holder never frees a grant.
	Orphan
)

// Grant is an admitted call's hold on its claims, until it is released. Its
// ID is the caller's, stable across the call's reruns (so a call asking
// again finds the grant it holds). Deadline is its authorization deadline:
// past it, a grant whose execution never started is released, and one
// whose execution may have started is kept (see Fate).
type Grant struct {
	ID string `json:"id,omitempty"`
	// Owner is the owner of the session that holds it: the owner whose
	// claim space its unshared claims are held in.
	Owner    string    `json:"owner,omitempty"`
	Session  string    `json:"session,omitempty"`
	Turn     string    `json:"turn,omitempty"`
	ToolCall string    `json:"toolCall,omitempty"`
	Claims   []Claim   `json:"claims,omitempty"`
	Granted  time.Time `json:"granted,omitzero"`
	Deadline time.Time `json:"deadline,omitzero"`
	// Quarantined: its execution is uncertain (the invocation died while
	// it ran); it keeps its claims until an operator's verdict settles it.
	Quarantined bool `json:"quarantined,omitempty"`
	// Orphaned: its session was deleted while its effect may still have
	// run; only an operator's ReleaseOrphan frees it.
	Orphaned bool `json:"orphaned,omitempty"`
	// Opaque: another owner's grant, as Masked shows it to a caller: it
	// blocks, and nothing else of it is told.
	Opaque bool `json:"opaque,omitempty"`
}

// Masked returns gs as owner may see them: its own grants whole, and each
// grant of another owner (only a shared claim can block across owners) as
// an opaque entry with nothing of it (no id, session, turn, call, claims
// or times), since those are the other tenant's. A grant recorded before
// grants named their owner is another owner's unless owner is "" too.
func Masked(owner string, gs []Grant) []Grant {
	if gs == nil {
		return nil
	}
	out := make([]Grant, len(gs))
	for i, g := range gs {
		if g.Owner == owner && !g.Opaque {
			out[i] = g
			continue
		}
		out[i] = Grant{Opaque: true}
	}
	return out
}

// Waiter is a blocked request in a space's queue, in arrival order (Seq).
// Seen is when it last asked; a waiter not seen for the policy's WaiterTTL
// leaves the queue.
type Waiter struct {
	ID      string    `json:"id"` // the grant it asks for
	Session string    `json:"session"`
	Claims  []Claim   `json:"claims"`
	Seq     int64     `json:"seq"`
	Arrived time.Time `json:"arrived"`
	Seen    time.Time `json:"seen"`
}

// Outcome is how the broker answered a request.
type Outcome string

// Outcomes.
const (
	Granted Outcome = "granted"
	// Blocked: a grant conflicts with the request, or an earlier waiter
	// does (Admission.Blockers, Admission.Ahead).
	Blocked Outcome = "blocked"
	// OverCapacity: the namespace's capacity is taken; the request waits
	// like a blocked one.
	OverCapacity Outcome = "over-capacity"
)

// Admission is the broker's answer.
type Admission struct {
	Outcome Outcome `json:"outcome"`
	Grant   Grant   `json:"grant,omitzero"` // when granted
	// Blockers are the grants the request waits for, another owner's
	// opaque (Masked); Ahead counts the earlier waiters it may not pass.
	Blockers []Grant `json:"blockers,omitempty"`
	Ahead    int     `json:"ahead,omitempty"`
}

// Request asks for a grant. ID names it (the same for every ask of one
// call); Session is who to wake when it may go on; Owner is its session's
// owner, whose claim space its unshared claims are asked in.
type Request struct {
	ID       string
	Owner    string
	Session  string
	Turn     string
	ToolCall string
	Claims   []Claim
	Deadline time.Time
}

// Check checks that req asks for at least one claim and that each is valid;
// the error matches ErrInvalid.
func (req Request) Check() error {
	if len(req.Claims) == 0 {
		return fmt.Errorf("%w: no claims", ErrInvalid)
	}
	return CheckAll(req.Claims)
}
