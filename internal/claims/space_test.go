package claims_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/claims"
)

var t0 = time.Unix(1000, 0)

func writes(ns, key string) []claims.Claim {
	return []claims.Claim{{Namespace: ns, Key: key, Access: claims.Write}}
}

// spacesFor is the empty spaces of req's claims, as a broker reads them the
// first time.
func spacesFor(reqs ...claims.Request) []*claims.Space {
	var cs []claims.Claim
	for _, r := range reqs {
		cs = append(cs, r.Claims...)
	}
	var out []*claims.Space
	for _, k := range claims.SpacesOf("", cs) {
		out = append(out, claims.NewSpace(k))
	}
	return out
}

func admit(t *testing.T, p claims.Policy, spaces []*claims.Space, req claims.Request, now time.Time) claims.Admission {
	t.Helper()
	adm, err := p.Admit(spaces, req, now)
	if err != nil {
		t.Fatalf("admit %s: %v", req.ID, err)
	}
	return adm
}

func ids(ws []claims.Waiter) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.ID
	}
	return out
}

// A later arrival may not pass an earlier waiter it conflicts with, even
// when the grant they both wait for is gone; one that conflicts with
// neither goes ahead.
func TestAdmitNoStarvation(t *testing.T) {
	var p claims.Policy
	hold := claims.Request{ID: "g1", Session: "s1", Claims: writes("fs", "a")}
	early := claims.Request{ID: "g2", Session: "s2", Claims: writes("fs", "a/b")}
	late := claims.Request{ID: "g3", Session: "s3", Claims: []claims.Claim{{Namespace: "fs", Key: "a/b/c", Access: claims.Read}}}
	other := claims.Request{ID: "g4", Session: "s4", Claims: writes("fs", "b")}
	s := spacesFor(hold)
	admit(t, p, s, hold, t0)
	if adm := admit(t, p, s, early, t0); adm.Outcome != claims.Blocked || len(adm.Blockers) != 1 || adm.Blockers[0].ID != "g1" {
		t.Fatalf("early: %+v", adm)
	}
	if ready, changed := p.Free(s, hold.ID, t0); !changed || !slices.Equal(ids(ready), []string{"g2"}) {
		t.Fatalf("free g1: ready %v changed %v, want g2", ids(ready), changed)
	}
	if adm := admit(t, p, s, late, t0); adm.Outcome != claims.Blocked || adm.Ahead != 1 || len(adm.Blockers) != 0 {
		t.Fatalf("late passed an earlier waiter: %+v", adm)
	}
	if adm := admit(t, p, s, other, t0); adm.Outcome != claims.Granted {
		t.Fatalf("other: %+v", adm)
	}
	if adm := admit(t, p, s, early, t0); adm.Outcome != claims.Granted {
		t.Fatalf("early after the release: %+v", adm)
	}
	if got := ids(s[0].Waiters); !slices.Equal(got, []string{"g3"}) {
		t.Fatalf("queue %v, want only g3 (the granted waiter leaves it)", got)
	}
}

// The fix for cancelled turns: A holds a write claim, B blocks on it and C
// blocks behind B. B withdraws (its turn was cancelled); once A is freed, C
// is ready and granted at once, long before B's waiter would have expired.
// Without the withdrawal, C stays behind B's stale waiter until the TTL.
func TestWithdrawLetsTheNextWaiterGo(t *testing.T) {
	p := claims.Policy{WaiterTTL: time.Hour}
	a := claims.Request{ID: "a", Session: "A", Claims: writes("orders", "o1")}
	b := claims.Request{ID: "b", Session: "B", Claims: writes("orders", "o1")}
	c := claims.Request{ID: "c", Session: "C", Claims: writes("orders", "o1")}
	run := func(withdraw bool) (ready []claims.Waiter, next claims.Admission) {
		s := spacesFor(a)
		admit(t, p, s, a, t0)
		if adm := admit(t, p, s, b, t0); adm.Outcome != claims.Blocked {
			t.Fatalf("b: %+v", adm)
		}
		if adm := admit(t, p, s, c, t0); adm.Outcome != claims.Blocked || adm.Ahead != 1 {
			t.Fatalf("c: %+v, want blocked behind b", adm)
		}
		if withdraw {
			if ready, changed := p.Withdraw(s, b.ID, t0); !changed || len(ready) != 0 {
				t.Fatalf("withdraw b: ready %v changed %v, want nothing ready (a holds)", ids(ready), changed)
			}
			if _, changed := p.Withdraw(s, b.ID, t0); changed {
				t.Fatal("a second withdrawal changed the space")
			}
		}
		ready, _ = p.Free(s, a.ID, t0.Add(time.Second))
		return ready, admit(t, p, s, c, t0.Add(2*time.Second))
	}
	if ready, next := run(false); !slices.Equal(ids(ready), []string{"b"}) || next.Outcome != claims.Blocked {
		t.Fatalf("without the withdrawal: ready %v, c %+v; want b ready and c still blocked", ids(ready), next)
	}
	if ready, next := run(true); !slices.Equal(ids(ready), []string{"c"}) || next.Outcome != claims.Granted {
		t.Fatalf("after the withdrawal: ready %v, c %+v; want c ready and granted", ids(ready), next)
	}
}

// A waiter that stopped asking leaves the queue after the TTL; one that
// asks again keeps its place.
func TestWaiterTTL(t *testing.T) {
	p := claims.Policy{WaiterTTL: time.Minute}
	hold := claims.Request{ID: "h", Session: "H", Claims: writes("fs", "x")}
	gone := claims.Request{ID: "gone", Session: "G", Claims: writes("fs", "x")}
	kept := claims.Request{ID: "kept", Session: "K", Claims: writes("fs", "x")}
	s := spacesFor(hold)
	admit(t, p, s, hold, t0)
	admit(t, p, s, gone, t0)
	admit(t, p, s, kept, t0.Add(time.Second))
	if adm := admit(t, p, s, kept, t0.Add(50*time.Second)); adm.Ahead != 1 {
		t.Fatalf("kept within the TTL: %+v, want one ahead", adm)
	}
	ready, changed := p.Free(s, hold.ID, t0.Add(90*time.Second))
	if !changed || !slices.Equal(ids(ready), []string{"kept"}) || !slices.Equal(ids(s[0].Waiters), []string{"kept"}) {
		t.Fatalf("past gone's TTL: ready %v, queue %v", ids(ready), ids(s[0].Waiters))
	}
	if got := s[0].Waiters[0].Seq; got != 2 {
		t.Fatalf("kept's place is %d, want 2 (its first)", got)
	}
}

// A request over two spaces is granted in both or waits in both; a
// request already granted is granted again with its new deadline, out of
// quarantine.
func TestAdmitAcrossSpaces(t *testing.T) {
	var p claims.Policy
	both := claims.Request{ID: "g1", Session: "s1", Claims: append(writes("fs", "src/a"), writes("git", "main")...)}
	gitOnly := claims.Request{ID: "g2", Session: "s2", Claims: writes("git", "main")}
	s := spacesFor(both)
	if len(s) != 2 || s[0].Namespace != "fs" || s[1].Namespace != "git" {
		t.Fatalf("spaces %+v, want fs then git", s)
	}
	gs := spacesFor(gitOnly)
	admit(t, p, gs, gitOnly, t0)
	joined := []*claims.Space{s[0], gs[0]}
	if adm := admit(t, p, joined, both, t0); adm.Outcome != claims.Blocked {
		t.Fatalf("both: %+v", adm)
	}
	if len(joined[0].Grants) != 0 || len(joined[0].Waiters) != 1 || len(joined[1].Waiters) != 1 {
		t.Fatalf("a blocked request took part of its claims or waits in one space only: %+v %+v", joined[0], joined[1])
	}
	p.Free(joined, gitOnly.ID, t0)
	deadline := t0.Add(time.Hour)
	both.Deadline = deadline
	adm := admit(t, p, joined, both, t0)
	if adm.Outcome != claims.Granted || len(joined[0].Grants) != 1 || len(joined[1].Grants) != 1 || len(joined[1].Waiters) != 0 {
		t.Fatalf("both after the release: %+v in %+v %+v", adm, joined[0], joined[1])
	}
	if !claims.MarkQuarantined(joined, both.ID) || claims.MarkQuarantined(joined, both.ID) {
		t.Fatal("quarantine: want a change once")
	}
	if stale := claims.Stale([]claims.Grant{adm.Grant}, t0); len(stale) != 0 {
		t.Fatalf("stale %+v", stale)
	}
	both.Deadline = deadline.Add(time.Hour)
	again := admit(t, p, joined, both, t0.Add(time.Minute))
	if again.Grant.Quarantined || !again.Grant.Deadline.Equal(both.Deadline) || !again.Grant.Granted.Equal(t0) {
		t.Fatalf("granted again: %+v", again.Grant)
	}
	if stale := claims.Stale([]claims.Grant{again.Grant}, both.Deadline.Add(time.Second)); len(stale) != 1 {
		t.Fatalf("past the deadline: stale %+v", stale)
	}
}

// Capacity admits claims while they fit, holds the next over capacity,
// and refuses one heavier than the whole without changing anything.
func TestAdmitCapacity(t *testing.T) {
	p := claims.Policy{Capacity: map[string]int{"gpu": 3}}
	c := func(id string, w int) claims.Request {
		return claims.Request{ID: id, Session: id, Claims: []claims.Claim{{Namespace: "gpu", Key: id, Access: claims.Read, Weight: w}}}
	}
	s := spacesFor(c("x", 1))
	admit(t, p, s, c("g1", 2), t0)
	if adm := admit(t, p, s, c("g2", 2), t0); adm.Outcome != claims.OverCapacity {
		t.Fatalf("over capacity: %+v", adm)
	}
	if adm := admit(t, p, s, c("g3", 1), t0); adm.Outcome != claims.Blocked || adm.Ahead != 1 {
		t.Fatalf("behind g2: %+v", adm)
	}
	before := len(s[0].Waiters)
	if _, err := p.Admit(s, c("g4", 4), t0); !errors.Is(err, claims.ErrTooHeavy) || len(s[0].Waiters) != before {
		t.Fatalf("too heavy: %v, %d waiters (was %d)", err, len(s[0].Waiters), before)
	}
	if ready, _ := p.Free(s, "g1", t0); !slices.Equal(ids(ready), []string{"g2"}) {
		t.Fatalf("ready %v, want g2 first (it fits; g3 is behind it)", ids(ready))
	}
}

// Admit refuses invalid requests and a space it was not given.
func TestAdmitRefuses(t *testing.T) {
	var p claims.Policy
	if _, err := p.Admit(nil, claims.Request{ID: "g"}, t0); !errors.Is(err, claims.ErrInvalid) {
		t.Fatalf("no claims: %v", err)
	}
	if _, err := p.Admit(spacesFor(), claims.Request{ID: "g", Claims: writes("fs", "a//b")}, t0); !errors.Is(err, claims.ErrInvalid) {
		t.Fatalf("non-canonical: %v", err)
	}
	req := claims.Request{ID: "g", Claims: append(writes("fs", "a"), writes("git", "b")...)}
	if _, err := p.Admit(spacesFor(claims.Request{Claims: writes("fs", "a")}), req, t0); err == nil {
		t.Fatal("a missing space was not refused")
	}
}
