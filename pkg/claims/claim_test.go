package claims

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestCheckKeyRefusesNonCanonical(t *testing.T) {
	for _, k := range []string{"", "a/../b", "./a", "a//b", "a/", "/a", "..", ".", "a/./b"} {
		err := CheckKey(k)
		var ke *KeyError
		if !errors.As(err, &ke) || !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckKey(%q) = %v, want a *KeyError", k, err)
		}
	}
	for _, k := range []string{"a", "a/b", "orders/o-1", "a.b/c..d"} {
		if err := CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v", k, err)
		}
	}
}

func TestConflictBySegments(t *testing.T) {
	w := func(k string) Claim { return Claim{Namespace: "fs", Key: k, Access: Write} }
	r := func(k string) Claim { return Claim{Namespace: "fs", Key: k, Access: Read} }
	cases := []struct {
		a, b Claim
		want bool
	}{
		{w("a/b"), w("a/b/c"), true},
		{w("a/b/c"), r("a/b"), true},
		{w("a/b"), w("a/bc"), false},
		{r("a/b"), r("a/b"), false},
		{w("a"), w("a"), true},
		{w("a"), Claim{Namespace: "fs", Instance: "other", Key: "a", Access: Write}, false},
		{w("a"), Claim{Namespace: "git", Key: "a", Access: Write}, false},
	}
	for _, c := range cases {
		if got := Conflict(c.a, c.b); got != c.want {
			t.Errorf("Conflict(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Conflict(c.b, c.a); got != c.want {
			t.Errorf("Conflict(%v, %v) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestStaticClaimsFromInput(t *testing.T) {
	f := Of(Static{Namespace: "orders", Field: "order", Access: Write})
	cs, err := f(json.RawMessage(`{"order":"o-1","amount":3}`))
	if err != nil || len(cs) != 1 || cs[0].Key != "o-1" || cs[0].Access != Write {
		t.Fatalf("claims = %+v, %v", cs, err)
	}
	if _, err := f(json.RawMessage(`{"order":"a/../b"}`)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a non-canonical key: %v, want ErrInvalid", err)
	}
	if _, err := f(json.RawMessage(`{"amount":3}`)); err == nil {
		t.Fatal("a missing field gave no error")
	}
	typed := Typed(func(in struct{ Path string }) ([]Claim, error) {
		return []Claim{{Namespace: "fs", Key: in.Path, Access: Read}}, nil
	})
	if _, err := typed(json.RawMessage(`{"Path":"a//b"}`)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("typed non-canonical key: %v", err)
	}
}

// A later arrival may not pass an earlier waiter it conflicts with, even
// when the grant they both wait for is gone; one that conflicts with
// neither goes ahead.
func TestJudgeNoStarvation(t *testing.T) {
	now := time.Unix(1000, 0)
	s := &space{Namespace: "fs"}
	hold := Request{ID: "g1", Session: "s1", Claims: []Claim{{Namespace: "fs", Key: "a", Access: Write}}}
	early := Request{ID: "g2", Session: "s2", Claims: []Claim{{Namespace: "fs", Key: "a/b", Access: Write}}}
	late := Request{ID: "g3", Session: "s3", Claims: []Claim{{Namespace: "fs", Key: "a/b/c", Access: Read}}}
	other := Request{ID: "g4", Session: "s4", Claims: []Claim{{Namespace: "fs", Key: "b", Access: Write}}}
	s.grant(Grant{ID: hold.ID, Claims: hold.Claims})
	if adm, _ := s.judge(early, 0); adm.Outcome != Blocked || len(adm.Blockers) != 1 {
		t.Fatalf("early: %+v", adm)
	}
	s.wait(early, now)
	s.dropGrant(hold.ID)
	if adm, _ := s.judge(late, 0); adm.Outcome != Blocked || adm.Ahead != 1 {
		t.Fatalf("late passed an earlier waiter: %+v", adm)
	}
	if adm, _ := s.judge(other, 0); adm.Outcome != Granted {
		t.Fatalf("other: %+v", adm)
	}
	if adm, _ := s.judge(early, 0); adm.Outcome != Granted {
		t.Fatalf("early after the release: %+v", adm)
	}
	if r := s.ready(0); len(r) != 1 || r[0].ID != early.ID {
		t.Fatalf("ready = %+v", r)
	}
}

func TestJudgeCapacity(t *testing.T) {
	s := &space{Namespace: "gpu"}
	c := func(k string, w int) []Claim { return []Claim{{Namespace: "gpu", Key: k, Access: Read, Weight: w}} }
	s.grant(Grant{ID: "g1", Claims: c("x", 2)})
	if adm, _ := s.judge(Request{ID: "g2", Claims: c("y", 2)}, 3); adm.Outcome != OverCapacity {
		t.Fatalf("over capacity: %+v", adm)
	}
	if adm, _ := s.judge(Request{ID: "g3", Claims: c("y", 1)}, 3); adm.Outcome != Granted {
		t.Fatalf("fits: %+v", adm)
	}
	if _, err := s.judge(Request{ID: "g4", Claims: c("z", 4)}, 3); !errors.Is(err, ErrTooHeavy) {
		t.Fatalf("too heavy: %v", err)
	}
}
