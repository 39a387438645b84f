package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/cli"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// TestVerdictOnAnUncertainExecution: the demo agent's invocations do not
// crash mid-tool, so the test records in the dev server's own table (kumo's
// state is process-wide) the facts a crash after execution.started leaves:
// a turn suspended on an uncertain execution. show names it and the
// command that settles it; verdict settles it once, then conflicts.
func TestVerdictOnAnUncertainExecution(t *testing.T) {
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
	ex := reducer.Execution{ID: ids.New("ex"), ToolCallID: "tc_" + turn + "_1_0", Tool: "send_email"}
	if _, err := store.Append(ctx, id, sess.State,
		reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "local"},
			Message: &reducer.Message{ID: ids.New("msg"), Text: demoMessage}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(10 * time.Minute)},
		reducer.Fact{Type: reducer.ExecutionStarted, Actor: agent, Turn: turn, Execution: &ex},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseUncertain, Execution: &ex},
	); err != nil {
		t.Fatal(err)
	}

	show := must(t, ctx, env, "show", id)
	for _, want := range []string{"status   suspended (uncertain)", "uncertain execution " + ex.ID + " of send_email",
		"baton verdict " + id + " " + ex.ID + " rerun|abandon"} {
		if !strings.Contains(show, want) {
			t.Fatalf("show lacks %q:\n%s", want, show)
		}
	}
	if out := must(t, ctx, env, "verdict", id, ex.ID, "abandon"); out != "abandoned "+ex.ID+" of session "+id+"\n" {
		t.Fatalf("verdict printed %q", out)
	}
	facts, err := store.Facts(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	settled := 0
	for _, f := range facts {
		if f.Type == reducer.ExecutionVerdict {
			settled++
			if f.Settled == nil || f.Settled.ExecutionID != ex.ID || f.Settled.Verdict != reducer.Abandon ||
				f.Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: "local"}) {
				t.Fatalf("verdict fact %+v", f)
			}
		}
	}
	if settled != 1 {
		t.Fatalf("%d verdict facts, want 1", settled)
	}
	expect(t, ctx, env, cli.ExitConflict, "awaits no verdict", "verdict", id, ex.ID, "rerun")
}

// TestShowCountsCompactions: a turn that compacted the session's history
// (recorded here through the session store, as the runner does) shows in
// show's context line.
func TestShowCountsCompactions(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	if show := must(t, ctx, env, "show", id); strings.Contains(show, "compacted") {
		t.Fatalf("a new session shows a compaction:\n%s", show)
	}
	emu := testenv.Emulator()
	names := provision.DefaultNames()
	store := session.New(dynamo.New(emu.Clients.DynamoDB, names.Table), streams.New(emu.Clients.S3, names.Bucket))
	sess, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	turn := ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	if sess.State, err = store.Append(ctx, id, sess.State,
		reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "local"},
			Message: &reducer.Message{ID: ids.New("msg"), Text: demoMessage}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(10 * time.Minute)},
	); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Compact(ctx, sess, []conversation.Message{conversation.Summary("earlier turns")},
		reducer.Compaction{Turns: 1, Messages: 2, Before: 900, After: 40}, agent); err != nil {
		t.Fatal(err)
	}
	if show := must(t, ctx, env, "show", id); !strings.Contains(show, "context  compacted 1 times") {
		t.Fatalf("show lacks the compaction:\n%s", show)
	}
}
