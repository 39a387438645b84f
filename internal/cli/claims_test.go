package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/cli"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// TestShowClaims: the facts a runner records for a quarantined grant and a
// turn blocked behind another session's grant (recorded here through the
// session store, in the dev server's table) show in show's output, and in
// the session view its JSON prints.
func TestShowClaims(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	emu := testenv.Emulator()
	names := provision.DefaultNames()
	store := session.New(dynamo.New(emu.Clients.DynamoDB, names.Table), streams.New(emu.Clients.S3, names.Bucket))
	sess, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	turn := ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	call := "tc_" + turn + "_1_0"
	mine := claims.Grant{ID: claims.GrantID(id, call), Session: id, Turn: turn, ToolCall: call,
		Claims: []claims.Claim{{Namespace: "orders", Key: "o-1", Access: claims.Write}}}
	theirs := claims.Grant{ID: "gr_other", Owner: sess.State.Owner, Session: "s_other", Claims: []claims.Claim{{Namespace: "orders", Key: "o-2", Access: claims.Write}}, Quarantined: true}
	// A blocker of another owner (a shared claim) is shown opaque.
	foreign := claims.Grant{ID: "gr_bob", Owner: "bob-" + ids.New("o"), Session: "s_bob", Claims: theirs.Claims}
	block := claims.Block{ToolCallID: "tc_" + turn + "_1_1", Tool: "refund", Claims: theirs.Claims, Outcome: claims.Blocked,
		Blockers: []claims.Grant{theirs, foreign}, Ahead: 2}
	if _, err := store.Append(ctx, id, sess.State,
		reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "local"},
			Message: &reducer.Message{ID: ids.New("msg"), Text: demoMessage}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(10 * time.Minute)},
		reducer.Fact{Type: reducer.ClaimGranted, Actor: agent, Turn: turn, Grant: &mine},
		reducer.Fact{Type: reducer.ClaimQuarantined, Actor: agent, Turn: turn, Grant: &mine},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseBlocked, Block: &block},
	); err != nil {
		t.Fatal(err)
	}
	show := must(t, ctx, env, "show", id)
	for _, want := range []string{"status   suspended (blocked)",
		"grant    " + mine.ID + " QUARANTINED until its execution's verdict by " + call + ": orders:o-1 (write)",
		"blocked  refund blocked on orders:o-2 (write): gr_other (session s_other) quarantined, a grant of another owner; 2 earlier waiter(s) ahead"} {
		if !strings.Contains(show, want) {
			t.Fatalf("show lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, "s_bob") || strings.Contains(show, "gr_bob") {
		t.Fatalf("show names another owner's grant:\n%s", show)
	}
	js := must(t, ctx, env, "show", "--json", id)
	if strings.Contains(js, "s_bob") || strings.Contains(js, "gr_bob") {
		t.Fatalf("show --json names another owner's grant:\n%s", js)
	}
	for _, want := range []string{`"grants":[{"id":"` + mine.ID, `"blocked":{"toolCallId":"` + block.ToolCallID, `"quarantined":true`} {
		if !strings.Contains(strings.ReplaceAll(strings.ReplaceAll(js, " ", ""), "\n", ""), want) {
			t.Fatalf("show --json lacks %s:\n%s", want, js)
		}
	}
}

// TestReleaseAnEndedTurnsGrant: a turn cancelled while it held a grant
// leaves it held; show says how to release it, release records the
// operator's release once, and a second is a conflict.
func TestReleaseAnEndedTurnsGrant(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	emu := testenv.Emulator()
	names := provision.DefaultNames()
	store := session.New(dynamo.New(emu.Clients.DynamoDB, names.Table), streams.New(emu.Clients.S3, names.Bucket))
	sess, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	turn := ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	call := "tc_" + turn + "_1_0"
	g := claims.Grant{ID: claims.GrantID(id, call), Session: id, Turn: turn, ToolCall: call,
		Claims: []claims.Claim{{Namespace: "orders", Key: "o-1", Access: claims.Write}}}
	if _, err := store.Append(ctx, id, sess.State,
		reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "local"},
			Message: &reducer.Message{ID: ids.New("msg"), Text: demoMessage}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(10 * time.Minute)},
		reducer.Fact{Type: reducer.ClaimGranted, Actor: agent, Turn: turn, Grant: &g},
	); err != nil {
		t.Fatal(err)
	}
	expect(t, ctx, env, cli.ExitConflict, "settle its execution instead", "release", id, g.ID)
	must(t, ctx, env, "cancel", id)
	show := must(t, ctx, env, "show", id)
	if want := "baton release " + id + " " + g.ID; !strings.Contains(show, want) {
		t.Fatalf("show lacks %q:\n%s", want, show)
	}
	if out := must(t, ctx, env, "release", id, g.ID); out != "released "+g.ID+" of session "+id+"\n" {
		t.Fatalf("release printed %q", out)
	}
	if show := must(t, ctx, env, "show", id); strings.Contains(show, g.ID) {
		t.Fatalf("show still lists the grant:\n%s", show)
	}
	expect(t, ctx, env, cli.ExitConflict, "not held", "release", id, g.ID)
}
