package batontest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/pkg/reducer"
)

// killer kills the process, as far as its fact logs go, right after a
// write holding a fact of type typ for session sess is durable: that write
// stands, and it and every later write fail (as a killed invocation's
// context, with context.Canceled) until revive, the fresh process.
type killer struct {
	mu   sync.Mutex
	sess string
	typ  reducer.Type
	dead bool
}

// kills is the interceptor of a Config whose fact logs k kills.
func (k *killer) kills() host.Interceptor {
	return host.Interceptor{Facts: func(next session.FactLog) session.FactLog { return &killLog{FactLog: next, k: k} }}
}

func (k *killer) arm(sess string, typ reducer.Type) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sess, k.typ = sess, typ
}

func (k *killer) revive() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sess, k.typ, k.dead = "", "", false
}

var errKilled = fmt.Errorf("the process was killed: %w", context.Canceled)

// write runs one write of facts to sess, unless the process is dead, and
// kills it after the write it is armed for.
func (k *killer) write(sess string, facts []reducer.Fact, w func() error) error {
	k.mu.Lock()
	dead := k.dead
	k.mu.Unlock()
	if dead {
		return errKilled
	}
	if err := w(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, f := range facts {
		if sess == k.sess && f.Type == k.typ {
			k.dead = true
			return errKilled
		}
	}
	return nil
}

// killLog is a fact log its killer kills.
type killLog struct {
	session.FactLog
	k *killer
}

func (l *killLog) Append(ctx context.Context, sess string, next reducer.State, facts ...reducer.Fact) error {
	return l.k.write(sess, facts, func() error { return l.FactLog.Append(ctx, sess, next, facts...) })
}

func (l *killLog) AppendWithReceipt(ctx context.Context, sess string, next reducer.State, rc *dynamo.Receipt, facts ...reducer.Fact) error {
	return l.k.write(sess, facts, func() error { return l.FactLog.AppendWithReceipt(ctx, sess, next, rc, facts...) })
}

// results counts the tool results in the whole conversation.
func results(req baton.Request) int {
	n := 0
	for _, m := range req.Messages {
		for _, c := range m.Content {
			if c.Type == baton.ContentToolResult {
				n++
			}
		}
	}
	return n
}

// holder is a child agent's model: it holds order A (no approval needed),
// then order B (which needs one), then answers.
var holder = playFunc(func(req baton.Request) (string, []baton.ModelCall) {
	switch n := results(req); n {
	case 0, 1:
		in, _ := json.Marshal(holdIn{Order: string(rune('A' + n))})
		return "", []baton.ModelCall{{ID: fmt.Sprintf("h%d", n), Name: "hold", Input: in}}
	}
	return "held both", nil
})

// holdTool is a write tool that counts its runs by order; B needs an
// approval.
func holdTool() (baton.Tool, func(string) int) {
	var mu sync.Mutex
	held := map[string]int{}
	t := baton.Func("hold", "Hold an order.", func(ctx context.Context, in holdIn) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		held[in.Order]++
		return "held " + in.Order, nil
	}, baton.Write(), baton.NeedsApproval(baton.When(func(in holdIn) bool { return in.Order == "B" })))
	return t, func(o string) int {
		mu.Lock()
		defer mu.Unlock()
		return held[o]
	}
}

// lastOf is the session's last fact of type typ.
func lastOf(t *testing.T, s *batontest.Session, typ reducer.Type) reducer.Fact {
	t.Helper()
	fs := s.Facts()
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].Type == typ {
			return fs[i]
		}
	}
	t.Fatalf("%s has no %s fact", s.ID, typ)
	return reducer.Fact{}
}

// assertCancelledForParent checks that child c's turn ended cancelled by
// the cascade, for a reason naming parent p, and that nothing of it runs
// again: its approval is no longer pending (on it or through the parent),
// a run does nothing, and its write ran once for A and never for B.
func assertCancelledForParent(t *testing.T, kit *batontest.Kit, p, c *batontest.Session, pend batontest.Approval, held func(string) int) {
	t.Helper()
	st := c.State()
	if st.Turn != nil || st.Last != reducer.TurnCancelled {
		t.Fatalf("child %s: status %s, last %s; want its turn cancelled", c.ID, st.Status, st.Last)
	}
	f := lastOf(t, c, reducer.TurnCancelled)
	if f.Actor != session.ParentActor || !strings.Contains(f.Reason, p.ID) {
		t.Fatalf("child's cancel by %+v for %q, want the parent's cascade, naming %s", f.Actor, f.Reason, p.ID)
	}
	if pst := p.State(); len(pst.Orphans) != 0 || pst.Next(kit.Now(), 0).Action == reducer.Cascade {
		t.Fatalf("parent still has orphans %+v", pst.Orphans)
	}
	if n := factCount(p, reducer.ChildCancelled); n != 1 {
		t.Fatalf("%d child.cancelled facts in the parent, want 1", n)
	}
	ctx := context.Background()
	ops := reducer.Actor{Kind: reducer.ActorOperator, ID: "approver"}
	for _, on := range []string{c.ID, p.ID} {
		if err := kit.Engine().Sessions.Answer(ctx, on, ops, reducer.Answer{ApprovalID: pend.ID, Decision: reducer.Approve, Reason: ""}); !errors.Is(err, session.ErrNotPending) {
			t.Fatalf("approving the cancelled child's request on %s: %v, want not pending", on, err)
		}
	}
	if out := c.Run(); out.Kind != "" {
		t.Fatalf("the cancelled child ran again: %+v", out)
	}
	if a, b := held("A"), held("B"); a != 1 || b != 0 {
		t.Fatalf("hold ran %d times for A and %d for B, want once and never", a, b)
	}
	if ex := c.Executions(); len(ex) != 1 {
		t.Fatalf("child executions %v, want the one hold of A", ex)
	}
}

// cascadeKit is a desk agent asking one "fraud" child, which holds A,
// then asks to hold B; the child waits for that approval, and its
// parent showed the request. It steps each session by hand (RunAlone),
// for the tests to kill the process at the points they choose.
func cascadeKit(t *testing.T, k *killer, lim baton.Limits) (*batontest.Kit, *batontest.Session, *batontest.Session, batontest.Approval, func(string) int) {
	t.Helper()
	hold, held := holdTool()
	kit := batontest.New(t, host.Config{Interceptors: []host.Interceptor{k.kills()}, Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "hold A and B"}), Children: baton.Children{Agents: []string{"fraud"}},
			Limits: lim, Steering: baton.SteerInterrupt},
		{Name: "fraud", Model: holder, Tools: []baton.Tool{hold}},
	}})
	p := kit.Session("desk")
	p.Post("Hold A and B.")
	if out := p.RunAlone(); out.Cause != reducer.CauseChildren {
		t.Fatalf("parent run = %+v", out)
	}
	c := p.Children()[0]
	if out := c.RunAlone(); out.Cause != reducer.CauseApproval {
		t.Fatalf("child run = %+v, want suspended for B's approval", out)
	}
	pend := c.Pending()
	if len(pend) != 1 || held("A") != 1 {
		t.Fatalf("child pending %+v, A held %d times", pend, held("A"))
	}
	return kit, p, c, pend[0], held
}

// TestChildCancelKilledBeforeCascade: the process cancelling a parent is
// killed right after the parent's turn.cancelled is durable, before it
// cancelled the child, which waits for an approval (no wake of its own
// will come). The parent's ending fact recorded the child as left running,
// so the parent's head is due for the cascade: the tick re-sends the
// parent's wake as lost, and that wake's invocation cancels the child,
// for a reason naming the parent. The child's approval can no longer be
// given, and its side effects do not run again.
func TestChildCancelKilledBeforeCascade(t *testing.T) {
	k := &killer{}
	kit, p, c, pend, held := cascadeKit(t, k, baton.Limits{})
	ctx := context.Background()
	k.arm(p.ID, reducer.TurnCancelled)
	err := kit.Engine().Sessions.Cancel(ctx, p.ID, reducer.Actor{Kind: reducer.ActorOperator, ID: batontest.Owner}, "no longer needed")
	if !errors.Is(err, errKilled) {
		t.Fatalf("cancel in the killed process: %v", err)
	}
	k.revive()
	pst := p.State()
	if pst.Turn != nil || pst.Last != reducer.TurnCancelled || len(pst.Orphans) != 1 || pst.Orphans[0].ID != c.ID {
		t.Fatalf("parent after the kill: %s, last %s, orphans %+v; want cancelled, the child left to cancel", pst.Status, pst.Last, pst.Orphans)
	}
	if cst := c.State(); cst.Status != reducer.Suspended || len(cst.Turn.Pending) != 1 {
		t.Fatalf("child after the kill: %s; want still waiting for its approval (the cascade did not run)", cst.Status)
	}
	// Nothing sent the parent's wake: the tick finds it lost once the
	// grace has passed.
	kit.Skip(tick.DefaultGrace + time.Second)
	if rep := kit.Tick(); rep.Rewoken < 1 {
		t.Fatalf("tick %+v, want the parent's wake re-sent", rep)
	}
	p.Run() // the re-sent wake
	assertCancelledForParent(t, kit, p, c, pend, held)
	// A second delivery of the wake changes nothing.
	before := len(p.Facts())
	p.Run()
	if n := len(p.Facts()); n != before {
		t.Fatalf("a second wake wrote %d facts", n-before)
	}
}

// TestChildOrphansOfEveryEnding: whatever ends the parent's turn while its
// child still runs — a failure (it was resumed past its cap of
// invocations, as a turn reaped too often is), an interrupting message —
// the child is cancelled with it, for a reason naming the parent; and when
// the process dies right after the failure, the parent's next wake does it.
func TestChildOrphansOfEveryEnding(t *testing.T) {
	t.Run("failed", func(t *testing.T) {
		k := &killer{}
		kit, p, c, pend, held := cascadeKit(t, k, baton.Limits{MaxInvocationsPerTurn: 1})
		// The child's request wakes the parent to show it: its second
		// invocation is past the cap and fails the turn, and the process
		// dies right after.
		k.arm(p.ID, reducer.TurnFailed)
		p.RunKilled(make(chan struct{}))
		k.revive()
		if st := p.State(); st.Last != reducer.TurnFailed || len(st.Orphans) != 1 || c.Status() != reducer.Suspended {
			t.Fatalf("parent after the killed failure: last %s, orphans %+v; child %s", st.Last, st.Orphans, c.Status())
		}
		p.Run()
		assertCancelledForParent(t, kit, p, c, pend, held)
		if f := lastOf(t, c, reducer.TurnCancelled); !strings.Contains(f.Reason, "failed") {
			t.Fatalf("child's cancel reason %q, want it to say the parent's turn failed", f.Reason)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		kit, p, c, pend, held := cascadeKit(t, &killer{}, baton.Limits{})
		p.Post("Stop, hold nothing.") // interrupts the suspended turn at once
		if st := p.State(); st.Last != reducer.TurnInterrupted {
			t.Fatalf("parent after the interrupting message: last %s", st.Last)
		}
		assertCancelledForParent(t, kit, p, c, pend, held)
	})
}

// TestChildDeleteOfAParentWithOrphans: a parent whose cancel was killed
// before its cascade is deleted: the delete first cancels the child left
// running, then deletes both; nothing of either is found after.
func TestChildDeleteOfAParentWithOrphans(t *testing.T) {
	k := &killer{}
	kit, p, c, _, held := cascadeKit(t, k, baton.Limits{})
	ctx := context.Background()
	ss := kit.Engine().Sessions
	k.arm(p.ID, reducer.TurnCancelled)
	if err := ss.Cancel(ctx, p.ID, reducer.Actor{Kind: reducer.ActorOperator, ID: batontest.Owner}, "stop"); !errors.Is(err, errKilled) {
		t.Fatalf("cancel in the killed process: %v", err)
	}
	k.revive()
	if err := ss.Delete(ctx, c.ID, batontest.Owner, batontest.Owner); !errors.Is(err, session.ErrTurnOpen) {
		t.Fatalf("delete of the child still waiting for its approval: %v, want refused for its open turn", err)
	}
	if err := ss.Delete(ctx, p.ID, batontest.Owner, batontest.Owner); err != nil {
		t.Fatalf("delete of the parent: %v", err)
	}
	for _, id := range []string{p.ID, c.ID} {
		if _, err := ss.Load(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("%s after the delete: %v, want not found", id, err)
		}
		if fs, err := ss.Facts(ctx, id, 0); err != nil || len(fs) != 0 {
			t.Fatalf("%s's facts after the delete: %d, %v", id, len(fs), err)
		}
	}
	if c.Run(); held("A") != 1 || held("B") != 0 {
		t.Fatalf("hold ran %d times for A and %d for B", held("A"), held("B"))
	}
}
