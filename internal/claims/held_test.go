package claims

import (
	"errors"
	"slices"
	"testing"
)

// Held holds a grant once (again, out of quarantine, on a rerun), finds
// it, quarantines and frees it, and tells an unnamed grant from one not
// held.
func TestHeld(t *testing.T) {
	var h Held
	fold := Fold(&h)
	g := &Grant{ID: "g1", ToolCall: "c1", Claims: []Claim{{Namespace: "orders", Key: "o/1", Access: Write}}}
	if err := fold.Hold(&Grant{ID: "g0"}); err == nil || err.Error() != "grant not named" {
		t.Fatalf("unnamed grant held: %v", err)
	}
	if err := fold.Hold(&Grant{ID: "g0", ToolCall: "c", Claims: []Claim{{Namespace: "orders", Key: "a//b", Access: Write}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid claim held: %v", err)
	}
	if err := fold.Hold(g); err != nil {
		t.Fatal(err)
	}
	i, err := fold.Find(g)
	if err != nil {
		t.Fatal(err)
	}
	fold.Quarantine(i)
	if held, ok := h.Grant("g1"); !ok || !held.Quarantined {
		t.Fatalf("after quarantine: %+v %v", held, ok)
	}
	clone := Held{Grants: slices.Clone(h.Grants)}
	if err := fold.Hold(g); err != nil || len(h.Grants) != 1 || h.Grants[0].Quarantined {
		t.Fatalf("held again: %+v %v", h.Grants, err)
	}
	if !clone.Grants[0].Quarantined {
		t.Fatal("holding again wrote through to a clone")
	}
	fold.Free(i)
	if _, err := fold.Find(g); !errors.Is(err, ErrNotHeld) || err.Error() != "grant g1 is not held" {
		t.Fatalf("freed grant found: %v", err)
	}
	if _, err := fold.Find(nil); err == nil || errors.Is(err, ErrNotHeld) {
		t.Fatalf("unnamed grant found: %v", err)
	}
}
