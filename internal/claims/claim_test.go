package claims

import (
	"encoding/json"
	"errors"
	"testing"
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
