package operator_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestDeleteOfAnUnreportedChildReportsFirst: a child session whose turn
// ended but that has not yet reported to its parent (a crash between the
// two) is deleted: the delete delivers the child's end to the parent
// first, which records it once and is woken, and then deletes the child.
// Deleted first, the child would leave the parent suspended for it with
// nothing to wake it.
func TestDeleteOfAnUnreportedChildReportsFirst(t *testing.T) {
	t.Parallel()
	e, alice, p, c := waitingForAChild(t)
	ct, _ := e.startTurn(c.ID)
	e.append(c.ID, reducer.Fact{Type: reducer.TurnCompleted, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: ct}, Turn: ct})
	e.wakes()
	if n := e.state(p.ID).Next(e.store.Clock(), 0); n.Reason != reducer.ReasonChildren {
		t.Fatalf("the parent waits for %q, want its children", n.Reason)
	}

	e.must(http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + c.ID, user: alice})
	items, objects := remains(t, e, c.ID)
	for _, it := range items {
		if strings.HasPrefix(it, c.ID+"/") && it != c.ID+"/-2" {
			t.Fatalf("the child's item %s is left after its delete", it)
		}
	}
	if len(objects) != 0 {
		t.Fatalf("the child's objects %v are left after its delete", objects)
	}
	e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + c.ID, user: alice})
	var ended int
	for _, f := range e.facts(p.ID) {
		if f.Type == reducer.ChildEnded && f.Child.ID == c.ID && f.Child.Status == reducer.TurnCompleted {
			ended++
		}
	}
	if ended != 1 {
		t.Fatalf("the parent recorded the deleted child's end %d times, want once", ended)
	}
	if n := e.state(p.ID).Next(e.store.Clock(), 0); n.Action != reducer.Resume {
		t.Fatalf("the parent after the child's delete: %+v, want it due to resume", n)
	}
	woken := false
	for _, w := range e.wakes() {
		woken = woken || (w.Session == p.ID && w.Reason == session.WakeChildEnded)
	}
	if !woken {
		t.Fatal("the parent was not woken by the child's report")
	}
}

// TestDeleteOfAChildThatNeverRanTellsItsParent: a child session created
// but not yet started (its task waits in its inbox) is deleted: the parent
// records the child as ended, cancelled by the delete, and is woken,
// instead of waiting for a child that will never run.
func TestDeleteOfAChildThatNeverRanTellsItsParent(t *testing.T) {
	t.Parallel()
	e, alice, p, c := waitingForAChild(t)
	e.wakes()
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + c.ID, user: alice})
	e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + c.ID, user: alice})
	var ended []reducer.Fact
	for _, f := range e.facts(p.ID) {
		if f.Type == reducer.ChildEnded && f.Child.ID == c.ID {
			ended = append(ended, f)
		}
	}
	if len(ended) != 1 || ended[0].Child.Status != reducer.TurnCancelled || !strings.Contains(ended[0].Child.Error, "deleted") {
		t.Fatalf("the parent's record of the deleted child: %+v, want one end, cancelled by the delete", ended)
	}
	if n := e.state(p.ID).Next(e.store.Clock(), 0); n.Action != reducer.Resume {
		t.Fatalf("the parent after the child's delete: %+v, want it due to resume", n)
	}
}

// waitingForAChild is alice's session p, whose turn suspended for the one
// child session c it started (created, its task waiting).
func waitingForAChild(t *testing.T) (e *env, alice string, p api.Session, c reducer.Child) {
	t.Helper()
	e = newEnv(t, nil)
	alice = ids.New("alice")
	p = e.create(alice)
	pt, _ := e.startTurn(p.ID)
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: pt}
	c = reducer.Child{ID: reducer.ChildID(p.ID, pt, "call-1"), ToolCallID: "call-1", Agent: "demo", Task: "look"}
	e.append(p.ID, reducer.Fact{Type: reducer.ChildStarted, Actor: agent, Turn: pt, Child: &c},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: pt, Cause: reducer.CauseChildren})
	if _, err := e.store.CreateChild(t.Context(), alice, reducer.Parent{Session: p.ID, Turn: pt, ToolCallID: "call-1", Depth: 1}, c); err != nil {
		t.Fatal(err)
	}
	return e, alice, p, c
}
