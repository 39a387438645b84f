package claims

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Grant is an admitted call's hold on its claims, until it is released. Its
// ID is the caller's, stable across the call's reruns (so a call asking
// again finds the grant it holds). Deadline is its authorization deadline:
// past it, a grant whose execution never started is released, and one
// whose execution may have started is kept (see Fate).
type Grant struct {
	ID       string    `json:"id"`
	Session  string    `json:"session"`
	Turn     string    `json:"turn,omitempty"`
	ToolCall string    `json:"toolCall,omitempty"`
	Claims   []Claim   `json:"claims"`
	Granted  time.Time `json:"granted"`
	Deadline time.Time `json:"deadline,omitzero"`
	// Quarantined: its execution is uncertain (the invocation died while
	// it ran); it keeps its claims until an operator's verdict settles it.
	Quarantined bool `json:"quarantined,omitempty"`
}

// Waiter is a blocked request in a space's queue, in arrival order (Seq).
// Seen is when it last asked; a waiter not seen for the broker's WaiterTTL
// leaves the queue.
type Waiter struct {
	ID      string    `json:"id"` // the grant it asks for
	Session string    `json:"session"`
	Claims  []Claim   `json:"claims"`
	Seq     int64     `json:"seq"`
	Arrived time.Time `json:"arrived"`
	Seen    time.Time `json:"seen"`
}

// space is one namespace and instance: its grants and waiters, as one
// DynamoDB item whose version every write checks.
type space struct {
	Namespace string   `json:"namespace"`
	Instance  string   `json:"instance,omitempty"`
	Grants    []Grant  `json:"grants,omitempty"`
	Waiters   []Waiter `json:"waiters,omitempty"`
	NextSeq   int64    `json:"nextSeq,omitempty"`
	version   int64    // 0: no item yet
}

type spaceKey struct{ ns, instance string }

func keyOf(c Claim) spaceKey { return spaceKey{c.Namespace, c.Instance} }

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

// ErrTooHeavy is matched when a request weighs more than its namespace's
// whole capacity: it could never be granted, so it is refused, not queued.
var ErrTooHeavy = errors.New("claims: the claims weigh more than the namespace's capacity")

// Admission is the broker's answer.
type Admission struct {
	Outcome Outcome `json:"outcome"`
	Grant   Grant   `json:"grant,omitzero"` // when granted
	// Blockers are the grants the request waits for; Ahead counts the
	// earlier waiters it may not pass.
	Blockers []Grant `json:"blockers,omitempty"`
	Ahead    int     `json:"ahead,omitempty"`
}

// Request asks for a grant. ID names it (the same for every ask of one
// call); Session is who to wake when it may go on.
type Request struct {
	ID       string
	Session  string
	Turn     string
	ToolCall string
	Claims   []Claim
	Deadline time.Time
}

// mine returns the claims of cs in space k.
func mine(cs []Claim, k spaceKey) []Claim {
	var out []Claim
	for _, c := range cs {
		if keyOf(c) == k {
			out = append(out, c)
		}
	}
	return out
}

func weigh(cs []Claim) int {
	n := 0
	for _, c := range cs {
		n += c.weight()
	}
	return n
}

// judge decides req in space s at now, under capacity (0: none), without
// changing s: granted, or what blocks it. A grant of req's own ID already
// held grants it again.
func (s *space) judge(req Request, capacity int) (Admission, error) {
	k := spaceKey{s.Namespace, s.Instance}
	want := mine(req.Claims, k)
	if capacity > 0 && weigh(want) > capacity {
		return Admission{}, fmt.Errorf("%w: %d > %d in %s", ErrTooHeavy, weigh(want), capacity, s.Namespace)
	}
	if i := slices.IndexFunc(s.Grants, func(g Grant) bool { return g.ID == req.ID }); i >= 0 {
		return Admission{Outcome: Granted, Grant: s.Grants[i]}, nil
	}
	adm := Admission{Outcome: Granted}
	used := 0
	for _, g := range s.Grants {
		used += weigh(mine(g.Claims, k))
		if ConflictAny(g.Claims, want) {
			adm.Outcome, adm.Blockers = Blocked, append(adm.Blockers, g)
		}
	}
	seq := s.seqOf(req.ID)
	for _, w := range s.Waiters {
		if w.ID == req.ID || (seq > 0 && w.Seq > seq) {
			continue
		}
		// An earlier waiter goes first when it conflicts, and under a
		// capacity every earlier waiter does: no later arrival starves it.
		if capacity > 0 || ConflictAny(w.Claims, want) {
			adm.Ahead++
		}
	}
	if adm.Outcome == Granted && adm.Ahead > 0 {
		adm.Outcome = Blocked
	}
	if adm.Outcome == Granted && capacity > 0 && used+weigh(want) > capacity {
		adm.Outcome = OverCapacity
		adm.Blockers = slices.Clone(s.Grants)
	}
	return adm, nil
}

// seqOf is the queue position of waiter id, 0 when it is not queued.
func (s *space) seqOf(id string) int64 {
	for _, w := range s.Waiters {
		if w.ID == id {
			return w.Seq
		}
	}
	return 0
}

// grant records g in s, taking its waiter out of the queue.
func (s *space) grant(g Grant) {
	s.dropWaiter(g.ID)
	if i := slices.IndexFunc(s.Grants, func(x Grant) bool { return x.ID == g.ID }); i >= 0 {
		s.Grants[i] = g
		return
	}
	s.Grants = append(s.Grants, g)
}

// wait queues req (or refreshes its place) as seen at now.
func (s *space) wait(req Request, now time.Time) {
	k := spaceKey{s.Namespace, s.Instance}
	for i := range s.Waiters {
		if s.Waiters[i].ID == req.ID {
			s.Waiters[i].Seen = now
			return
		}
	}
	s.NextSeq++
	s.Waiters = append(s.Waiters, Waiter{ID: req.ID, Session: req.Session, Claims: mine(req.Claims, k),
		Seq: s.NextSeq, Arrived: now, Seen: now})
}

func (s *space) dropWaiter(id string) {
	s.Waiters = slices.DeleteFunc(s.Waiters, func(w Waiter) bool { return w.ID == id })
}

// dropGrant removes grant id; it reports whether s held it.
func (s *space) dropGrant(id string) bool {
	n := len(s.Grants)
	s.Grants = slices.DeleteFunc(s.Grants, func(g Grant) bool { return g.ID == id })
	return len(s.Grants) != n
}

// expireWaiters drops the waiters not seen since before cutoff.
func (s *space) expireWaiters(cutoff time.Time) bool {
	n := len(s.Waiters)
	s.Waiters = slices.DeleteFunc(s.Waiters, func(w Waiter) bool { return w.Seen.Before(cutoff) })
	return len(s.Waiters) != n
}

// ready lists the waiters that nothing blocks now, in arrival order: each
// is free of every grant and of every earlier waiter it conflicts with
// (under capacity, of every earlier waiter, and it must fit).
func (s *space) ready(capacity int) []Waiter {
	k := spaceKey{s.Namespace, s.Instance}
	used := 0
	for _, g := range s.Grants {
		used += weigh(mine(g.Claims, k))
	}
	waiters := slices.Clone(s.Waiters)
	slices.SortFunc(waiters, func(a, b Waiter) int { return int(a.Seq - b.Seq) })
	var out []Waiter
	for i, w := range waiters {
		free := true
		for _, g := range s.Grants {
			free = free && !ConflictAny(g.Claims, w.Claims)
		}
		for _, e := range waiters[:i] {
			free = free && capacity == 0 && !ConflictAny(e.Claims, w.Claims)
		}
		if free && capacity > 0 {
			free = used+weigh(w.Claims) <= capacity
		}
		if free {
			out = append(out, w)
		}
	}
	return out
}
