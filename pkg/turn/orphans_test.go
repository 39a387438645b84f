package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// Issue 24, item 1: session A's refund is running at the tool's server when
// its invocation dies; A is cancelled (its grant stays held) and deleted.
// The delete destroys the facts that said the grant's effect may still
// run, so it must not free the grant: a second session on the same order
// stays blocked past the grant's deadline, however often it asks, until
// A's owner releases the orphan; another owner can neither see nor
// release it. Then the blocked session completes, and the order was
// refunded once.
func TestClaimsDeleteKeepsARunningEffectsGrant(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	h := killedMidRefund(t, ctx)
	srv, instance, inv, b, a, gid := h.srv, h.instance, h.inv, h.b, h.a, h.gid
	if err := inv.sessions.Cancel(ctx, a, operator, "stop"); err != nil {
		t.Fatal(err)
	}
	if err := inv.sessions.Delete(ctx, a, teststack.Alice.ID, teststack.Alice.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.sessions.Load(ctx, a); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("the deleted session loads: %v", err)
	}
	pass(t, h.lease.Add(20*time.Millisecond))
	other := newSession(t, inv, "Refund o1 too.")
	if out, err := inv.runner.Start(ctx, other); err != nil || out.Cause != reducer.CauseBlocked {
		t.Fatalf("second session: %+v %v, want blocked", out, err)
	}
	for i := range 2 { // past the deadline, every ask finds it held
		if out, err := inv.runner.Resume(ctx, other); err != nil || out.Cause != reducer.CauseBlocked {
			t.Fatalf("ask %d after the delete: %+v %v, want still blocked (the deleted holder's grant freed)", i+1, out, err)
		}
	}
	space := claims.SpaceKey{Owner: teststack.Alice.ID, Namespace: "orders", Instance: instance}
	if gs, _, err := b.Grants(ctx, space); err != nil || len(gs) != 1 || gs[0].ID != gid || !gs[0].Orphaned || !gs[0].Quarantined {
		t.Fatalf("the broker holds %+v %v, want %s orphaned", gs, err, gid)
	}
	if runs, overlaps := srv.report(); runs["o1"] != 1 || len(overlaps) != 0 {
		t.Fatalf("while orphaned: runs %v, overlaps %v; want the one refund", runs, overlaps)
	}
	orphans, err := inv.sessions.Orphans(ctx, teststack.Alice.ID)
	if err != nil || !slices.ContainsFunc(orphans, func(g claims.Grant) bool { return g.ID == gid && g.Session == a && g.Orphaned }) {
		t.Fatalf("alice's orphans %+v %v, want %s of %s", orphans, err, gid, a)
	}
	if gs, err := inv.sessions.Orphans(ctx, "bob"); err != nil || len(gs) != 0 {
		t.Fatalf("bob sees orphans %+v %v", gs, err)
	}
	if err := inv.sessions.ReleaseOrphan(ctx, "bob", gid); !errors.Is(err, session.ErrNotOrphan) {
		t.Fatalf("bob's release of alice's orphan: %v, want ErrNotOrphan", err)
	}
	if out, err := inv.runner.Resume(ctx, other); err != nil || out.Cause != reducer.CauseBlocked {
		t.Fatalf("after bob's refused release: %+v %v, want still blocked", out, err)
	}
	if err := inv.sessions.ReleaseOrphan(ctx, teststack.Alice.ID, gid); err != nil {
		t.Fatal(err)
	}
	if err := inv.sessions.ReleaseOrphan(ctx, teststack.Alice.ID, gid); !errors.Is(err, session.ErrNotOrphan) {
		t.Fatalf("a second release: %v, want ErrNotOrphan", err)
	}
	if out, err := inv.runner.Resume(ctx, other); err != nil || out.Kind != turn.Completed {
		t.Fatalf("after the release: %+v %v, want completed", out, err)
	}
	if runs, overlaps := srv.report(); runs["o1"] != 2 || len(overlaps) != 0 {
		t.Fatalf("runs %v, overlaps %v; want two refunds, one after the other", runs, overlaps)
	}
}

// A grant whose holder was never found (no facts, no tombstone) fails
// closed like a deleted one: past its deadline it is orphaned, not read as
// an execution that never started, and it blocks until released.
func TestClaimsGrantOfAMissingHolderIsOrphaned(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	srv := newOrderServer(t, 0)
	instance := ids.New("i")
	agent := refundAgent(t, refundOne, refundTool(srv, instance, true), turn.Limits{Budget: 30 * time.Second})
	inv, b := claimed(t, agent, time.Second)
	ghost := ids.New("s")
	g := claims.Request{ID: claims.GrantID(ghost, "tc_x"), Owner: teststack.Alice.ID, Session: ghost, Turn: "turn_x", ToolCall: "tc_x",
		Claims: []claims.Claim{{Namespace: "orders", Instance: instance, Key: "o1", Access: claims.Write}}, Deadline: time.Now().Add(-time.Second)}
	if adm, err := b.Acquire(ctx, g); err != nil || adm.Outcome != claims.Granted {
		t.Fatalf("ghost: %+v %v", adm, err)
	}
	other := newSession(t, inv, "Refund o1.")
	if out, err := inv.runner.Start(ctx, other); err != nil || out.Cause != reducer.CauseBlocked {
		t.Fatalf("behind a missing holder's grant: %+v %v, want blocked", out, err)
	}
	if os, err := inv.sessions.Orphans(ctx, teststack.Alice.ID); err != nil || !slices.ContainsFunc(os, func(x claims.Grant) bool { return x.ID == g.ID }) {
		t.Fatalf("orphans %+v %v, want %s", os, err, g.ID)
	}
	if err := inv.sessions.ReleaseOrphan(ctx, teststack.Alice.ID, g.ID); err != nil {
		t.Fatal(err)
	}
	if out, err := inv.runner.Resume(ctx, other); err != nil || out.Kind != turn.Completed {
		t.Fatalf("after the release: %+v %v, want completed", out, err)
	}
}

// sessionOf creates a session of owner with one waiting message.
func sessionOf(t *testing.T, inv *invocation, owner, text string) string {
	t.Helper()
	id := ids.New("s")
	st, err := inv.sessions.Create(context.Background(), id, owner, "demo")
	if err != nil {
		t.Fatal(err)
	}
	teststack.Post(t, inv.sessions, id, st, text)
	return id
}

// Issue 24, item 6: claims are per owner by default, so alice's grant on
// an order never blocks bob's refund of the same order; a shared claim
// (the opt-in) does block across owners, and then bob's view of what
// blocks him — his state, his turn.suspended fact, his facts as exported —
// names nothing of alice's: no session, turn, call, grant id or claims.
// Alice, blocked by her own grant, sees it whole.
func TestClaimsPerOwnerAndOpaqueAcrossOwners(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	for _, shared := range []bool{false, true} {
		srv := newOrderServer(t, 0)
		instance := ids.New("i")
		tl := refundTool(srv, instance, false)
		tl.Claims = claims.Of(claims.Static{Namespace: "orders", Instance: instance, Field: "order", Access: claims.Write, Shared: shared})
		agent := refundAgent(t, refundOne, tl, turn.Limits{Budget: 30 * time.Second})
		inv, b := claimed(t, agent, time.Minute)
		holder := sessionOf(t, inv, "alice", "Hold o1.")
		hold := claims.Request{ID: claims.GrantID(holder, "tc_alice"), Owner: "alice", Session: holder, Turn: "turn_alice", ToolCall: "tc_alice",
			Claims: []claims.Claim{{Namespace: "orders", Instance: instance, Key: "o1", Access: claims.Write, Shared: shared}}, Deadline: time.Now().Add(time.Hour)}
		if adm, err := b.Acquire(ctx, hold); err != nil || adm.Outcome != claims.Granted {
			t.Fatalf("alice's grant: %+v %v", adm, err)
		}
		bob := sessionOf(t, inv, "bob", "Refund o1.")
		out, err := inv.runner.Start(ctx, bob)
		if !shared {
			if err != nil || out.Kind != turn.Completed {
				t.Fatalf("per owner: bob's refund %+v %v, want completed (alice's grant is in her own space)", out, err)
			}
			continue
		}
		if err != nil || out.Cause != reducer.CauseBlocked {
			t.Fatalf("shared: bob's refund %+v %v, want blocked by alice's grant", out, err)
		}
		st := teststack.Load(t, inv.sessions, bob)
		if bl := st.Turn.Block.Blockers; len(bl) != 1 || !bl[0].Opaque || bl[0].ID != "" || bl[0].Session != "" || len(bl[0].Claims) != 0 {
			t.Fatalf("bob's blockers %+v, want one opaque entry", bl)
		}
		raw, err := json.Marshal(facts(t, inv, bob))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := json.Marshal(st.Turn.Block)
		for _, secret := range []string{holder, hold.ID, hold.Turn, hold.ToolCall} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("bob's facts hold alice's %q", secret)
			}
		}
		if strings.Contains(string(block), "alice") {
			t.Errorf("bob's block names alice: %s", block)
		}
		mine := sessionOf(t, inv, "alice", "Refund o1 too.")
		if out, err := inv.runner.Start(ctx, mine); err != nil || out.Cause != reducer.CauseBlocked {
			t.Fatalf("alice's second session: %+v %v, want blocked", out, err)
		}
		if bl := teststack.Load(t, inv.sessions, mine).Turn.Block.Blockers; len(bl) != 1 || bl[0].Opaque || bl[0].ID != hold.ID || bl[0].Session != holder {
			t.Fatalf("alice's blockers %+v, want her own grant whole", bl)
		}
	}
}
