package claims

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// The admission decision, as pure functions on the spaces a request
// touches: a broker reads the spaces, lets Policy decide and change them,
// and writes back what changed under its own concurrency control.

// Space is one namespace and instance in one owner's claim space, or in
// the space every owner shares (Shared): the grants held in it and its
// queue of waiters, in arrival order. Its JSON form is what a broker
// stores.
type Space struct {
	Owner     string   `json:"owner,omitempty"`
	Shared    bool     `json:"shared,omitempty"`
	Namespace string   `json:"namespace"`
	Instance  string   `json:"instance,omitempty"`
	Grants    []Grant  `json:"grants,omitempty"`
	Waiters   []Waiter `json:"waiters,omitempty"`
	NextSeq   int64    `json:"nextSeq,omitempty"`
}

// SpaceKey names a space: a namespace and instance of Owner's claim space,
// or, Shared, of the one every owner shares (Owner is then empty).
type SpaceKey struct {
	Owner               string
	Shared              bool
	Namespace, Instance string
}

// KeyOf is the space of claim c asked for by a session of owner: the
// shared one for a shared claim, owner's otherwise.
func KeyOf(owner string, c Claim) SpaceKey {
	if c.Shared {
		return SpaceKey{Shared: true, Namespace: c.Namespace, Instance: c.Instance}
	}
	return SpaceKey{Owner: owner, Namespace: c.Namespace, Instance: c.Instance}
}

// Key is s's name.
func (s *Space) Key() SpaceKey {
	return SpaceKey{Owner: s.Owner, Shared: s.Shared, Namespace: s.Namespace, Instance: s.Instance}
}

// NewSpace is the empty space k.
func NewSpace(k SpaceKey) *Space {
	return &Space{Owner: k.Owner, Shared: k.Shared, Namespace: k.Namespace, Instance: k.Instance}
}

// SpacesOf lists the spaces cs touch for a session of owner, each once, by
// owner's before the shared ones, then by namespace and instance: the order
// a broker reads and writes them in.
func SpacesOf(owner string, cs []Claim) []SpaceKey {
	var keys []SpaceKey
	for _, c := range cs {
		if k := KeyOf(owner, c); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b SpaceKey) int {
		return cmp.Or(compareBool(a.Shared, b.Shared), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Instance, b.Instance))
	})
	return keys
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// Policy is a broker's admission rules. Its zero value is no capacity
// anywhere and DefaultWaiterTTL.
type Policy struct {
	// Capacity is the weighted capacity of a namespace (per instance); a
	// namespace not named has none: only conflicts block in it.
	Capacity map[string]int
	// WaiterTTL: see DefaultWaiterTTL; 0 is the default.
	WaiterTTL time.Duration
}

func (p Policy) waiterTTL() time.Duration {
	if p.WaiterTTL > 0 {
		return p.WaiterTTL
	}
	return DefaultWaiterTTL
}

// Admit decides req at now over spaces, which must be the spaces of its
// claims (SpacesOf) as stored, and changes them to match. Waiters not seen
// within the TTL leave first. A request is granted when, in every space,
// no grant conflicts with it, no earlier waiter it conflicts with is queued
// (under a capacity: no earlier waiter at all) and its weight fits; the
// grant is then recorded in every space and its waiter leaves the queues.
// Otherwise it is Blocked (or OverCapacity when only the capacity stops
// it) and waits in every space, keeping its place if it was queued. A
// request already granted is granted again, its grant updated from req and
// out of quarantine. Invalid claims (ErrInvalid), claims heavier than
// their namespace's capacity (ErrTooHeavy) and a missing space are errors,
// and change nothing.
func (p Policy) Admit(spaces []*Space, req Request, now time.Time) (Admission, error) {
	if err := p.check(spaces, req); err != nil {
		return Admission{}, err
	}
	out := Admission{Outcome: Granted}
	var held *Grant
	for _, s := range spaces {
		s.expireWaiters(now.Add(-p.waiterTTL()))
		adm := s.judge(req, p.Capacity[s.Namespace])
		switch {
		case adm.Outcome == Blocked || (adm.Outcome == OverCapacity && out.Outcome == Granted):
			out.Outcome = adm.Outcome
		case adm.Outcome == Granted && adm.Grant.ID != "":
			held = &adm.Grant
		}
		for _, g := range adm.Blockers {
			if !slices.ContainsFunc(out.Blockers, func(x Grant) bool { return x.ID == g.ID }) {
				out.Blockers = append(out.Blockers, g)
			}
		}
		out.Ahead += adm.Ahead
	}
	if out.Outcome != Granted {
		for _, s := range spaces {
			s.wait(req, now)
		}
		return out, nil
	}
	g := Grant{ID: req.ID, Granted: now}
	if held != nil {
		g = *held
	}
	g.Owner, g.Session, g.Turn, g.ToolCall, g.Claims, g.Deadline, g.Quarantined = req.Owner, req.Session, req.Turn, req.ToolCall, slices.Clone(req.Claims), req.Deadline, false
	for _, s := range spaces {
		s.grant(g)
	}
	return Admission{Outcome: Granted, Grant: g}, nil
}

// check refuses req before Admit changes anything: invalid claims, a space
// of its claims not given, and claims too heavy for a space's capacity.
func (p Policy) check(spaces []*Space, req Request) error {
	if err := req.Check(); err != nil {
		return err
	}
	for _, k := range SpacesOf(req.Owner, req.Claims) {
		if !slices.ContainsFunc(spaces, func(s *Space) bool { return s.Key() == k }) {
			return fmt.Errorf("claims: the space %s@%s of request %s was not given", k.Namespace, k.Instance, req.ID)
		}
	}
	for _, s := range spaces {
		capacity, want := p.Capacity[s.Namespace], weigh(mine(req.Claims, s.Key()))
		if capacity > 0 && want > capacity {
			return fmt.Errorf("%w: %d > %d in %s", ErrTooHeavy, want, capacity, s.Namespace)
		}
	}
	return nil
}

// Free releases grant grantID at now: it leaves every space of spaces, as
// do the waiters past the TTL. It returns the waiters nothing blocks any
// more (see Ready), and whether any space changed (if none did, there is
// nothing to write).
func (p Policy) Free(spaces []*Space, grantID string, now time.Time) (ready []Waiter, changed bool) {
	for _, s := range spaces {
		changed = s.dropGrant(grantID) || changed
	}
	return p.settle(spaces, now, changed)
}

// Withdraw takes waiter waiterID out of the queue of every space of
// spaces at now, with the waiters past the TTL, and returns what Free
// does: a waiter behind it may be free now.
func (p Policy) Withdraw(spaces []*Space, waiterID string, now time.Time) (ready []Waiter, changed bool) {
	for _, s := range spaces {
		changed = s.dropWaiter(waiterID) || changed
	}
	return p.settle(spaces, now, changed)
}

// settle expires the waiters past the TTL and lists the ready ones.
func (p Policy) settle(spaces []*Space, now time.Time, changed bool) ([]Waiter, bool) {
	cutoff := now.Add(-p.waiterTTL())
	var ready []Waiter
	for _, s := range spaces {
		changed = s.expireWaiters(cutoff) || changed
		for _, w := range p.Ready(s) {
			if !slices.ContainsFunc(ready, func(x Waiter) bool { return x.ID == w.ID }) {
				ready = append(ready, w)
			}
		}
	}
	return ready, changed
}

// MarkQuarantined marks grant grantID quarantined in every space of spaces
// that holds it, and reports whether one changed.
func MarkQuarantined(spaces []*Space, grantID string) bool {
	changed := false
	for _, s := range spaces {
		for i := range s.Grants {
			if s.Grants[i].ID == grantID && !s.Grants[i].Quarantined {
				s.Grants[i].Quarantined, changed = true, true
			}
		}
	}
	return changed
}

// MarkOrphaned marks grant grantID orphaned (and quarantined) in every
// space of spaces that holds it, and reports whether one changed.
func MarkOrphaned(spaces []*Space, grantID string) bool {
	changed := false
	for _, s := range spaces {
		for i := range s.Grants {
			if g := &s.Grants[i]; g.ID == grantID && !(g.Orphaned && g.Quarantined) {
				g.Orphaned, g.Quarantined, changed = true, true, true
			}
		}
	}
	return changed
}

// Stale lists the grants of blockers past their deadline at now: a broker
// asks its Fate about them before it makes a request wait for them. An
// orphaned grant is never stale: only an operator's release frees it.
func Stale(blockers []Grant, now time.Time) []Grant {
	var out []Grant
	for _, g := range blockers {
		if !g.Orphaned && !g.Deadline.IsZero() && now.After(g.Deadline) {
			out = append(out, g)
		}
	}
	return out
}

// Ready lists the waiters of s that nothing blocks now, in arrival order:
// each is free of every grant and of every earlier waiter it conflicts
// with (under a capacity, of every earlier waiter, and it must fit).
func (p Policy) Ready(s *Space) []Waiter {
	k, capacity := s.Key(), p.Capacity[s.Namespace]
	used := 0
	for _, g := range s.Grants {
		used += weigh(mine(g.Claims, k))
	}
	waiters := slices.Clone(s.Waiters)
	slices.SortFunc(waiters, func(a, b Waiter) int { return cmp.Compare(a.Seq, b.Seq) })
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

// mine returns the claims of cs in space k (of a session of k's owner, for
// an owner's space).
func mine(cs []Claim, k SpaceKey) []Claim {
	var out []Claim
	for _, c := range cs {
		if KeyOf(k.Owner, c) == k {
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

// judge decides req in space s under capacity (0: none), without changing
// s: granted, or what blocks it. A grant of req's own ID already held
// grants it again, unless it is orphaned: its session was deleted, and no
// invocation may run under it again (it blocks its own request). The
// caller checked that req fits the capacity at all.
func (s *Space) judge(req Request, capacity int) Admission {
	want := mine(req.Claims, s.Key())
	if i := slices.IndexFunc(s.Grants, func(g Grant) bool { return g.ID == req.ID }); i >= 0 {
		if s.Grants[i].Orphaned {
			return Admission{Outcome: Blocked, Blockers: []Grant{s.Grants[i]}}
		}
		return Admission{Outcome: Granted, Grant: s.Grants[i]}
	}
	adm := Admission{Outcome: Granted}
	used := 0
	for _, g := range s.Grants {
		used += weigh(mine(g.Claims, s.Key()))
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
	return adm
}

// seqOf is the queue position of waiter id, 0 when it is not queued.
func (s *Space) seqOf(id string) int64 {
	for _, w := range s.Waiters {
		if w.ID == id {
			return w.Seq
		}
	}
	return 0
}

// grant records g in s, taking its waiter out of the queue.
func (s *Space) grant(g Grant) {
	s.dropWaiter(g.ID)
	if i := slices.IndexFunc(s.Grants, func(x Grant) bool { return x.ID == g.ID }); i >= 0 {
		s.Grants[i] = g
		return
	}
	s.Grants = append(s.Grants, g)
}

// wait queues req (or refreshes its place) as seen at now.
func (s *Space) wait(req Request, now time.Time) {
	for i := range s.Waiters {
		if s.Waiters[i].ID == req.ID {
			s.Waiters[i].Seen = now
			return
		}
	}
	s.NextSeq++
	s.Waiters = append(s.Waiters, Waiter{ID: req.ID, Session: req.Session, Claims: mine(req.Claims, s.Key()),
		Seq: s.NextSeq, Arrived: now, Seen: now})
}

// dropWaiter removes waiter id; it reports whether s queued it.
func (s *Space) dropWaiter(id string) bool {
	n := len(s.Waiters)
	s.Waiters = slices.DeleteFunc(s.Waiters, func(w Waiter) bool { return w.ID == id })
	return len(s.Waiters) != n
}

// dropGrant removes grant id; it reports whether s held it.
func (s *Space) dropGrant(id string) bool {
	n := len(s.Grants)
	s.Grants = slices.DeleteFunc(s.Grants, func(g Grant) bool { return g.ID == id })
	return len(s.Grants) != n
}

// expireWaiters drops the waiters not seen since before cutoff.
func (s *Space) expireWaiters(cutoff time.Time) bool {
	n := len(s.Waiters)
	s.Waiters = slices.DeleteFunc(s.Waiters, func(w Waiter) bool { return w.Seen.Before(cutoff) })
	return len(s.Waiters) != n
}
