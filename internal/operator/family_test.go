package operator_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

// family is a parent session of user, with a child that has a child of
// its own (a grandchild), and a second child that was recorded but never
// created. Every turn ended, every child's end was delivered, and each
// session that exists has a closed turn stream and a snapshot. With open,
// the grandchild then runs a turn of its own, for a message posted to it.
type family struct {
	parent, child, grandchild, uncreated string
}

func (e *env) family(t *testing.T, user string, open bool) family {
	t.Helper()
	ctx := e.t.Context()
	p := e.create(user)
	f := family{parent: p.ID}
	// spawn records a child.started in session id's running turn and
	// creates the child, as the runner does.
	spawn := func(id, turn, call string, depth int, create bool) string {
		c := reducer.Child{ID: reducer.ChildID(id, turn, call), ToolCallID: call, Agent: "demo", Task: "look"}
		e.append(id, reducer.Fact{Type: reducer.ChildStarted, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: turn}, Turn: turn, Child: &c})
		if create {
			if _, err := e.store.CreateChild(ctx, user, reducer.Parent{Session: id, Turn: turn, ToolCallID: call, Depth: depth}, c); err != nil {
				e.t.Fatal(err)
			}
		}
		return c.ID
	}
	// done delivers child id's end to its parent's turn and ends that.
	done := func(parent, turn string, kids ...string) {
		for _, k := range kids {
			end := reducer.Child{ID: k, ToolCallID: e.state(k).Parent.ToolCallID, Status: reducer.TurnCompleted, Output: "ok"}
			e.append(parent, reducer.Fact{Type: reducer.ChildEnded, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: k}, Turn: turn, Child: &end})
		}
		e.append(parent, reducer.Fact{Type: reducer.TurnCompleted, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: turn}, Turn: turn})
	}
	pt, _ := e.startTurn(f.parent)
	f.child = spawn(f.parent, pt, "call-1", 1, true)
	f.uncreated = spawn(f.parent, pt, "call-2", 1, false)
	ct, _ := e.startTurn(f.child)
	f.grandchild = spawn(f.child, ct, "call-1", 2, true)
	gt, _ := e.startTurn(f.grandchild)
	e.append(f.grandchild, reducer.Fact{Type: reducer.TurnCompleted, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: gt}, Turn: gt})
	done(f.child, ct, f.grandchild)
	unc := reducer.Child{ID: f.uncreated, ToolCallID: "call-2", Status: reducer.TurnFailed, Error: "never ran"}
	e.append(f.parent, reducer.Fact{Type: reducer.ChildEnded, Actor: reducer.Actor{Kind: reducer.ActorSystem, ID: "t"}, Turn: pt, Child: &unc})
	done(f.parent, pt, f.child)
	for _, id := range []string{f.parent, f.child, f.grandchild} {
		seedObjects(t, e, id)
	}
	if open {
		e.startTurn(f.grandchild) // a message posted to it later
	}
	return f
}

// only checks that all that remains of each of ids is its tombstone, by
// user, purged.
func (e *env) only(t *testing.T, user string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		items, objects := remains(t, e, id)
		if len(items) != 1 || items[0] != id+"/-2" || len(objects) != 0 {
			t.Fatalf("%s after the delete: items %v objects %v, want only its tombstone", id, items, objects)
		}
		tomb, err := dynamoOn(shared.Table).Tombstone(t.Context(), id)
		if err != nil || tomb.By != user || tomb.Owner != user || tomb.At.IsZero() || !tomb.Purged {
			t.Fatalf("tombstone of %s: %+v, %v", id, tomb, err)
		}
		e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + id, user: user})
	}
}

// TestDeleteCascadesToChildSessions: DELETE /sessions/{id} of a parent
// deletes its children and theirs: a Scan of the table and a listing of
// the bucket find nothing of the parent, the child or the grandchild but
// each one's tombstone, which names who deleted it; a child that was
// recorded but never created leaves nothing at all. A family with a
// running turn anywhere in it is refused 409, and nothing of it is
// deleted.
func TestDeleteCascadesToChildSessions(t *testing.T) {
	t.Parallel()
	e := newEmuEnv(t, nil)
	alice := ids.New("alice")

	busy := e.family(t, alice, true)
	counts := func(f family) []int {
		return []int{len(e.facts(f.parent)), len(e.facts(f.child)), len(e.facts(f.grandchild))}
	}
	before := counts(busy)
	got := e.must(http.StatusConflict, req{method: "DELETE", path: "/sessions/" + busy.parent, user: alice})
	if !strings.Contains(got.errorMessage(t), "open turn") || !slices.Equal(counts(busy), before) {
		t.Fatalf("refused delete: %q, facts %v, want %v", got.errorMessage(t), counts(busy), before)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + busy.grandchild, user: alice})

	f := e.family(t, alice, false)
	for _, id := range []string{f.parent, f.child, f.grandchild} {
		if items, objects := remains(t, e, id); len(items) < 3 || len(objects) < 2 {
			t.Fatalf("%s before the delete: items %v objects %v", id, items, objects)
		}
	}
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + f.parent, user: alice})
	e.only(t, alice, f.parent, f.child, f.grandchild)
	if items, objects := remains(t, e, f.uncreated); len(items)+len(objects) != 0 {
		t.Fatalf("the child never created left items %v objects %v", items, objects)
	}
	var list api.List
	e.must(http.StatusOK, req{method: "GET", path: "/sessions", user: alice}).json(t, &list)
	if n := len(list.Sessions); n != 3 { // the busy family's
		t.Fatalf("alice lists %d sessions, want the 3 of the refused family", n)
	}
}

// TestDeleteOfAFamilyCutShortIsFinishedByARetry: when the bucket fails
// during a family's delete, the parent is buried and the answer is an
// error; the owner's retry finds the children in the parent's facts,
// which outlive them, and finishes the purge of all three.
func TestDeleteOfAFamilyCutShortIsFinishedByARetry(t *testing.T) {
	t.Parallel()
	ft := faults.New(nil)
	e := newEmuEnv(t, streamsThrough(ft))
	alice := ids.New("alice")
	f := e.family(t, alice, false)
	ft.Set(faults.Rule{Op: "s3:DeleteObject", Fault: faults.ServerError})
	if got := e.do(req{method: "DELETE", path: "/sessions/" + f.parent, user: alice}); got.status < 500 {
		t.Fatalf("delete with a failing bucket: %d %s, want a 5xx", got.status, got.body)
	}
	if tomb, err := dynamoOn(shared.Table).Tombstone(t.Context(), f.parent); err != nil || tomb.Purged {
		t.Fatalf("parent's tombstone after a failed purge: %+v, %v; want one not purged", tomb, err)
	}
	ft.Set()
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + f.parent, user: alice})
	e.only(t, alice, f.parent, f.child, f.grandchild)
}
