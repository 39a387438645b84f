package worker_test

import (
	"testing"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// endedChild makes a parent session whose running turn started one child
// and suspended for it, and the child, whose one turn completed without
// reporting to the parent (as after a crash between the two). It returns
// the parent's and the child's ids.
func endedChild(t *testing.T, inv *invocation) (parent, child string) {
	t.Helper()
	ctx := t.Context()
	ss := inv.sessions
	parent = newSession(t, inv, "demo", "Ask a child.")
	pt := ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: pt}
	c := reducer.Child{ID: reducer.ChildID(parent, pt, "call-1"), ToolCallID: "call-1", Agent: "demo", Task: "look"}
	if _, err := ss.Append(ctx, parent, teststack.Load(t, ss, parent),
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: pt, Stream: pt, Lease: time.Now().Add(time.Minute)},
		reducer.Fact{Type: reducer.ChildStarted, Actor: agent, Turn: pt, Child: &c},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: pt, Cause: reducer.CauseChildren}); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.CreateChild(ctx, alice.ID, reducer.Parent{Session: parent, Turn: pt, ToolCallID: "call-1", Depth: 1}, c); err != nil {
		t.Fatal(err)
	}
	ct := ids.New("turn")
	cagent := reducer.Actor{Kind: reducer.ActorAgent, ID: ct}
	if _, err := ss.Append(ctx, c.ID, teststack.Load(t, ss, c.ID),
		reducer.Fact{Type: reducer.TurnStarted, Actor: cagent, Turn: ct, Stream: ct, Lease: time.Now().Add(time.Minute)},
		reducer.Fact{Type: reducer.TurnCompleted, Actor: cagent, Turn: ct}); err != nil {
		t.Fatal(err)
	}
	if n := teststack.Load(t, ss, c.ID).Next(time.Now(), 0); n.Reason != reducer.ReasonReport {
		t.Fatalf("the child waits for %q, want its report", n.Reason)
	}
	return parent, c.ID
}

// TestWakeOfADeletedChildIsDropped: a child that ended but had not
// reported is deleted, and the delete cut short after its burial (its
// facts not yet purged). Its report wake then loads it, but can never
// write its report: it is dropped, like a wake for any session that does
// not exist, and not handed back to SQS to be retried until the DLQ. The
// parent hears nothing from a deleted child.
func TestWakeOfADeletedChildIsDropped(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newEmuStack(t)
	inv := s.fresh(demoAgent(t, script(t, threeSteps), turn.Limits{}))
	parent, child := endedChild(t, inv)
	h, err := inv.sessions.Head(ctx, child)
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamo.New(inv.clients.DynamoDB, s.env.Table).Bury(ctx, h, alice.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	before := len(teststack.Facts(t, inv.sessions, parent))
	if _, err := inv.worker.Handle(ctx, wake.Wake{Session: child, Reason: session.WakeChildEnded}); err != nil {
		t.Fatalf("the deleted child's report wake: %v; want it dropped", err)
	}
	if n := len(teststack.Facts(t, inv.sessions, parent)); n != before {
		t.Fatalf("the parent got %d facts from a deleted child's report, want none", n-before)
	}
}
