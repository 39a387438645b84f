package operator_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/claims/claimsdb"
	"github.com/baton-run/baton/internal/ids"
)

// The orphan routes are the owner's: alice lists and releases the grant
// her deleted session left orphaned; bob, another caller, sees none of it
// and his release is answered 404, changing nothing. A release frees the
// grant in the broker; a second is 404.
func TestOrphanRoutesAreTheOwners(t *testing.T) {
	t.Parallel()
	e := newEmuEnv(t, nil)
	ctx := t.Context()
	b := claimsdb.New(shared.Clients().DynamoDB, shared.Table)
	e.store.Claims = b
	alice, bob := ids.New("alice"), ids.New("bob")
	gone := ids.New("s")
	ns := ids.New("ns")
	c := claims.Claim{Namespace: ns, Key: "o1", Access: claims.Write}
	want := claims.Request{ID: claims.GrantID(gone, "tc_1"), Owner: alice, Session: gone, Turn: "turn_1", ToolCall: "tc_1",
		Claims: []claims.Claim{c}, Deadline: time.Now().Add(time.Hour)}
	adm, err := b.Acquire(ctx, want)
	if err != nil || adm.Outcome != claims.Granted {
		t.Fatalf("acquire: %+v %v", adm, err)
	}
	if err := b.Orphan(ctx, adm.Grant); err != nil {
		t.Fatal(err)
	}
	list := func(user string) []claims.Grant {
		t.Helper()
		r := e.do(get("GET", "/claims/orphans", user))
		if r.status != http.StatusOK {
			t.Fatalf("list as %s: %d %s", user, r.status, r.body)
		}
		var v api.Orphans
		r.json(t, &v)
		if v.Orphans == nil {
			t.Fatalf("list as %s: orphans null: %s", user, r.body)
		}
		return v.Orphans
	}
	if got := list(alice); len(got) != 1 || got[0].ID != want.ID || got[0].Session != gone || !got[0].Orphaned {
		t.Fatalf("alice's orphans %+v", got)
	}
	if got := list(bob); len(got) != 0 {
		t.Fatalf("bob sees %+v", got)
	}
	path := "/claims/orphans/" + want.ID + "/release"
	if r := e.do(req{method: "POST", path: path, user: bob, body: "{}"}); r.status != http.StatusNotFound || !strings.Contains(r.errorMessage(t), "no orphaned grant") {
		t.Fatalf("bob's release: %d %s", r.status, r.body)
	}
	if gs, _, err := b.Grants(ctx, claims.SpaceKey{Owner: alice, Namespace: ns}); err != nil || len(gs) != 1 {
		t.Fatalf("after bob's release the broker holds %+v %v, want alice's grant", gs, err)
	}
	if r := e.do(req{method: "POST", path: path, user: alice, body: "{}"}); r.status != http.StatusAccepted {
		t.Fatalf("alice's release: %d %s", r.status, r.body)
	}
	if gs, _, err := b.Grants(ctx, claims.SpaceKey{Owner: alice, Namespace: ns}); err != nil || len(gs) != 0 {
		t.Fatalf("after alice's release the broker holds %+v %v", gs, err)
	}
	if got := list(alice); len(got) != 0 {
		t.Fatalf("alice's orphans after the release: %+v", got)
	}
	if r := e.do(req{method: "POST", path: path, user: alice, body: "{}"}); r.status != http.StatusNotFound {
		t.Fatalf("a second release: %d %s", r.status, r.body)
	}
	if r := e.do(get("GET", "/claims/orphans", "")); r.status != http.StatusUnauthorized {
		t.Fatalf("no identity: %d", r.status)
	}
}

func get(method, path, user string) req { return req{method: method, path: path, user: user} }
