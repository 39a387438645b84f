package batontest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestChildApprovalShownAfterAKill: the child's invocation is killed right
// after its suspension for an approval is durable, before its parent was
// shown the request. The child's head waits with ReasonShow, so the tick
// re-sends its wake as lost; that wake's invocation shows the request to
// the parent (once: a second wake writes nothing), and an answer through
// the parent reaches the child, whose write then runs once.
func TestChildApprovalShownAfterAKill(t *testing.T) {
	k := &killer{}
	hold, held := holdTool()
	kit := batontest.New(t, host.Config{Interceptors: []host.Interceptor{k.kills()}, Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "hold A and B"}), Children: baton.Children{Agents: []string{"fraud"}}},
		{Name: "fraud", Model: holder, Tools: []baton.Tool{hold}},
	}})
	p := kit.Session("desk")
	p.Post("Hold A and B.")
	if out := p.RunAlone(); out.Cause != reducer.CauseChildren {
		t.Fatalf("parent run = %+v", out)
	}
	c := p.Children()[0]
	k.arm(c.ID, reducer.ApprovalRequested)
	// The invocation, killed once the suspension is durable.
	if _, err := kit.Engine().Worker().Handle(context.Background(), wake.Wake{Session: c.ID, Reason: "child"}); !errors.Is(err, errKilled) {
		t.Fatalf("the killed invocation: %v", err)
	}
	k.revive()
	cst := c.State()
	if cst.Status != reducer.Suspended || len(cst.Turn.Pending) != 1 || cst.Turn.ShownUp {
		t.Fatalf("child after the kill: %s, pending %+v, shown %v; want suspended for B, not shown", cst.Status, cst.Turn.Pending, cst.Turn.ShownUp)
	}
	if n := factCount(p, reducer.ChildApproval); n != 0 {
		t.Fatalf("the parent has %d child.approval facts after the kill, want 0", n)
	}
	if got := cst.Next(kit.Now(), 0).Reason; got != reducer.ReasonShow {
		t.Fatalf("the child waits for %q, want %q", got, reducer.ReasonShow)
	}
	kit.Skip(tick.DefaultGrace + time.Second)
	if rep := kit.Tick(); rep.Rewoken < 1 {
		t.Fatalf("tick %+v, want the child's wake re-sent", rep)
	}
	c.Run() // the re-sent wake
	if n := factCount(p, reducer.ChildApproval); n != 1 {
		t.Fatalf("the parent has %d child.approval facts, want 1", n)
	}
	if !c.State().Turn.ShownUp || factCount(c, reducer.ChildShown) != 1 {
		t.Fatalf("the child did not record that its request was shown")
	}
	pend := c.Pending()[0]
	if st := p.State(); st.Turn == nil || len(st.Turn.Requests) != 1 || st.Turn.Requests[0].Approval.ID != pend.ID {
		t.Fatalf("the parent's turn shows %+v, want the child's request %s", st.Turn, pend.ID)
	}
	// A second delivery of the wake shows nothing again.
	before, cbefore := len(p.Facts()), len(c.Facts())
	c.Run()
	if len(p.Facts()) != before || len(c.Facts()) != cbefore {
		t.Fatalf("a second wake wrote %d facts to the parent and %d to the child", len(p.Facts())-before, len(c.Facts())-cbefore)
	}
	// Answered through the parent, the child holds B, once.
	if err := kit.Engine().Sessions.Answer(context.Background(), p.ID, reducer.Actor{Kind: reducer.ActorOperator, ID: "approver"}, reducer.Answer{ApprovalID: pend.ID, Decision: reducer.Approve, Reason: ""}); err != nil {
		t.Fatalf("approve through the parent: %v", err)
	}
	if out := c.Run(); out.Kind != batontest.Completed {
		t.Fatalf("child after the approval: %+v", out)
	}
	if a, b := held("A"), held("B"); a != 1 || b != 1 {
		t.Fatalf("hold ran %d times for A and %d for B, want once each", a, b)
	}
}

// TestChildSpendOfAnOrphanCountsTowardsParent: a child cancelled because
// its parent's turn ended without it never reports its end, so its spend
// comes with the parent's child.cancelled: the parent session's usage is
// what its own turn recorded plus the child session's, once, even when
// the cascade ran after a crash.
func TestChildSpendOfAnOrphanCountsTowardsParent(t *testing.T) {
	k := &killer{}
	kit, p, c, _, _ := cascadeKit(t, k, baton.Limits{})
	k.arm(p.ID, reducer.TurnCancelled)
	if err := kit.Engine().Sessions.Cancel(context.Background(), p.ID, reducer.Actor{Kind: reducer.ActorOperator, ID: batontest.Owner}, "stop"); !errors.Is(err, errKilled) {
		t.Fatalf("cancel in the killed process: %v", err)
	}
	k.revive()
	own := p.State().Usage
	kit.Skip(tick.DefaultGrace + time.Second)
	kit.Tick()
	p.Run() // the cascade
	child := c.State().Usage
	if child.InputTokens == 0 || c.State().Last != reducer.TurnCancelled {
		t.Fatalf("child usage %+v, last %s; want a cancelled child that spent", child, c.State().Last)
	}
	if got, want := p.State().Usage, own.Add(child); got != want {
		t.Fatalf("parent session usage %+v, want its own %+v plus the child's %+v", got, own, child)
	}
	p.Run()
	if got, want := p.State().Usage, own.Add(child); got != want {
		t.Fatalf("after a second wake: %+v, want %+v", got, want)
	}
}

// TestChildOfADeletedParentDeletesItself: the parent's last invocation,
// still running after its turn was cancelled and its session deleted,
// creates one more child (as a stale writer would: a session of its own).
// That child's first invocation finds its parent gone: it cancels its
// turn and deletes itself, so nothing of the family is left; its task's
// model is never asked.
func TestChildOfADeletedParentDeletesItself(t *testing.T) {
	k := &killer{}
	kit, p, c, _, held := cascadeKit(t, k, baton.Limits{})
	ctx := context.Background()
	ss := kit.Engine().Sessions
	turnID := p.State().Turn.ID
	if err := ss.Cancel(ctx, p.ID, reducer.Actor{Kind: reducer.ActorOperator, ID: batontest.Owner}, "stop"); err != nil {
		t.Fatal(err)
	}
	if err := ss.Delete(ctx, p.ID, batontest.Owner, batontest.Owner); err != nil {
		t.Fatalf("delete of the parent: %v", err)
	}
	late := reducer.Child{ID: reducer.ChildID(p.ID, turnID, "late"), ToolCallID: "late", Agent: "fraud", Task: "hold C"}
	created, err := ss.CreateChild(ctx, batontest.Owner, reducer.Parent{Session: p.ID, Turn: turnID, ToolCallID: "late", Depth: 1}, late)
	if err != nil || !created {
		t.Fatalf("the stale writer's child: %v, %v", created, err)
	}
	if _, err := kit.Engine().Worker().Handle(ctx, wake.Wake{Session: late.ID, Reason: "child"}); err != nil {
		t.Fatalf("the late child's invocation: %v", err)
	}
	for _, id := range []string{p.ID, c.ID, late.ID} {
		if _, err := ss.Load(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("%s after: %v, want not found", id, err)
		}
		if fs, err := ss.Facts(ctx, id, 0); err != nil || len(fs) != 0 {
			t.Fatalf("%s's facts after: %d, %v", id, len(fs), err)
		}
	}
	if held("A") != 1 || held("B") != 0 || held("C") != 0 {
		t.Fatalf("hold ran %d, %d, %d times for A, B, C; want once, never, never", held("A"), held("B"), held("C"))
	}
}
