package reducer

import (
	"errors"
	"testing"
	"time"
)

// childTurn is a session whose open turn t1 started child c of call tc1.
func childTurn(t *testing.T) (State, Child) {
	t.Helper()
	c := Child{ID: ChildID("s1", "t1", "tc1"), ToolCallID: "tc1", Agent: "fraud", Task: "check"}
	st, err := Reduce([]Fact{
		{Seq: 1, Type: SessionCreated, Actor: op, Agent: "desk", Owner: "o"},
		{Seq: 2, Type: MessageReceived, Actor: op, Message: &Message{ID: "m1", Text: "hi"}},
		{Seq: 3, Type: TurnStarted, Actor: ag, Turn: "t1", Stream: "t1"},
		{Seq: 4, Type: ChildStarted, Actor: ag, Turn: "t1", Child: &c},
		{Seq: 5, Type: TurnSuspended, Actor: ag, Turn: "t1", Cause: CauseChildren},
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, c
}

var (
	op = Actor{Kind: ActorOperator, ID: "o"}
	ag = Actor{Kind: ActorAgent, ID: "t1"}
)

// TestChildEndedOnce: a turn waiting for its child needs nothing until the
// child's end is recorded, then resumes; a second end of the same child is
// refused as not pending, so a duplicate delivery changes nothing.
func TestChildEndedOnce(t *testing.T) {
	st, c := childTurn(t)
	now := time.Now()
	if n := st.Next(now, time.Minute); n.Action != None || n.Reason != ReasonChildren {
		t.Fatalf("waiting for a child: %+v", n)
	}
	if _, err := st.Apply(Fact{Seq: 6, Type: TurnResumed, Actor: ag, Turn: "t1"}); !errors.Is(err, ErrIllegal) {
		t.Fatalf("resume while the child runs: %v, want refused", err)
	}
	end := c
	end.Status, end.Output, end.Usage = TurnCompleted, "ok", Usage{InputTokens: 5, Steps: 1}
	st2, err := st.Apply(Fact{Seq: 6, Type: ChildEnded, Actor: Actor{Kind: ActorAgent, ID: c.ID}, Turn: "t1", Child: &end})
	if err != nil {
		t.Fatal(err)
	}
	if n := st2.Next(now, 0); n.Action != Resume || st2.Usage.InputTokens != 5 {
		t.Fatalf("after the child's end: %+v, usage %+v", n, st2.Usage)
	}
	if _, err := st2.Apply(Fact{Seq: 7, Type: ChildEnded, Actor: ag, Turn: "t1", Child: &end}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("a second end: %v, want ErrNotPending", err)
	}
	other := end
	other.ID = "s_other"
	if _, err := st2.Apply(Fact{Seq: 7, Type: ChildEnded, Actor: ag, Turn: "t1", Child: &other}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("the end of a child the turn did not start: %v, want ErrNotPending", err)
	}
	if _, err := st.Apply(Fact{Seq: 6, Type: ChildStarted, Actor: ag, Turn: "t1", Child: &c}); !errors.Is(err, ErrIllegal) {
		t.Fatalf("a child started twice: %v", err)
	}
}

// TestChildEach: suspended with Each, the turn resumes as each child ends.
func TestChildEach(t *testing.T) {
	a := Child{ID: "s_a", ToolCallID: "a", Agent: "x"}
	b := Child{ID: "s_b", ToolCallID: "b", Agent: "x"}
	st, err := Reduce([]Fact{
		{Seq: 1, Type: SessionCreated, Actor: op, Agent: "desk", Owner: "o"},
		{Seq: 2, Type: MessageReceived, Actor: op, Message: &Message{ID: "m1", Text: "hi"}},
		{Seq: 3, Type: TurnStarted, Actor: ag, Turn: "t1", Stream: "t1"},
		{Seq: 4, Type: ChildStarted, Actor: ag, Turn: "t1", Child: &a},
		{Seq: 5, Type: ChildStarted, Actor: ag, Turn: "t1", Child: &b},
		{Seq: 6, Type: TurnSuspended, Actor: ag, Turn: "t1", Cause: CauseChildren, Each: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	ea := a
	ea.Status = TurnFailed
	st, err = st.Apply(Fact{Seq: 7, Type: ChildEnded, Actor: ag, Turn: "t1", Child: &ea})
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Next(time.Now(), 0); n.Action != Resume {
		t.Fatalf("each: one of two ended: %+v, want resume", n)
	}
	st, err = st.Apply(Fact{Seq: 8, Type: TurnResumed, Actor: ag, Turn: "t1"},
		Fact{Seq: 9, Type: TurnSuspended, Actor: ag, Turn: "t1", Cause: CauseChildren, Each: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Next(time.Now(), 0); n.Action != None {
		t.Fatalf("each: suspended again with b running: %+v, want none", n)
	}
}

// TestChildReport: a child session whose turn ended waits to report it
// (a wake-like need the tick re-sends), until child.reported.
func TestChildReport(t *testing.T) {
	p := Parent{Session: "s1", Turn: "t1", ToolCallID: "tc1", Depth: 1}
	ct := Actor{Kind: ActorAgent, ID: "t9"}
	st, err := Reduce([]Fact{
		{Seq: 1, Type: SessionCreated, Actor: ag, Agent: "fraud", Owner: "o", Parent: &p},
		{Seq: 2, Type: MessageReceived, Actor: ag, Message: &Message{ID: "m1", Text: "check"}},
		{Seq: 3, Type: TurnStarted, Actor: ct, Turn: "t9", Stream: "t9"},
		{Seq: 4, Type: TurnCompleted, Actor: ct, Turn: "t9"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Next(st.Updated, 0); n.Action != Report {
		t.Fatalf("an ended child: %+v, want report", n)
	}
	if n := st.Next(st.Updated.Add(time.Hour), time.Minute); n.Action != Rewake {
		t.Fatalf("an ended child long after: %+v, want rewake", n)
	}
	st, err = st.Apply(Fact{Seq: 5, Type: ChildReported, Actor: Actor{Kind: ActorSystem, ID: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Next(st.Updated, 0); n.Action != None {
		t.Fatalf("a reported child: %+v", n)
	}
	if _, err := st.Apply(Fact{Seq: 6, Type: ChildReported, Actor: Actor{Kind: ActorSystem, ID: "r"}}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("reported twice: %v", err)
	}
}

// TestChildOrphans: a turn that ends (any way) with a child still running
// records it as an orphan in the ending fact itself; the idle session is
// then due for the cascade (a wake-like need the tick re-sends once lost),
// before a start, until child.cancelled names the orphan, once. A child
// that ended before the turn is no orphan.
func TestChildOrphans(t *testing.T) {
	for _, end := range []Fact{
		{Seq: 6, Type: TurnCancelled, Actor: op, Turn: "t1"},
		{Seq: 6, Type: TurnFailed, Actor: ag, Turn: "t1", Failure: &Failure{Kind: FailLimit, Error: "resumed too often"}},
	} {
		st, c := childTurn(t)
		if end.Type == TurnFailed {
			// Running again (the child's request woke it), it fails.
			st.Turn.Requests = []ChildRequest{{Child: c.ID, Approval: Approval{ID: "ap1", ToolCallID: "x"}}}
			var err error
			if st, err = st.Apply(Fact{Seq: 6, Type: TurnResumed, Actor: ag, Turn: "t1"}); err != nil {
				t.Fatal(err)
			}
			end.Seq = 7
		}
		st, err := st.Apply(end, Fact{Seq: end.Seq + 1, Type: MessageReceived, Actor: op, Message: &Message{ID: "m2", Text: "next"}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []Orphan{{ID: c.ID, Turn: "t1", Ended: end.Type}}; len(st.Orphans) != 1 || st.Orphans[0] != want[0] {
			t.Fatalf("%s: orphans %+v, want %+v", end.Type, st.Orphans, want)
		}
		if n := st.Next(st.Updated, 0); n.Action != Cascade || n.Reason != ReasonCascade || !n.Due.Equal(st.Updated) {
			t.Fatalf("%s: idle with an orphan and a message: %+v, want the cascade first", end.Type, n)
		}
		if n := st.Next(st.Updated.Add(time.Hour), time.Minute); n.Action != Rewake {
			t.Fatalf("%s: long after: %+v, want rewake", end.Type, n)
		}
		sys := Actor{Kind: ActorSystem, ID: "parent"}
		seq := st.LastSeq + 1
		if _, err := st.Apply(Fact{Seq: seq, Type: ChildCancelled, Actor: sys, Turn: "t2", Child: &Child{ID: c.ID}}); !errors.Is(err, ErrNotPending) {
			t.Fatalf("child.cancelled naming another turn: %v", err)
		}
		st, err = st.Apply(Fact{Seq: seq, Type: ChildCancelled, Actor: sys, Turn: "t1", Child: &Child{ID: c.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if n := st.Next(st.Updated, 0); len(st.Orphans) != 0 || n.Action != Start {
			t.Fatalf("%s: after child.cancelled: orphans %+v, next %+v", end.Type, st.Orphans, n)
		}
		if _, err := st.Apply(Fact{Seq: seq + 1, Type: ChildCancelled, Actor: sys, Turn: "t1", Child: &Child{ID: c.ID}}); !errors.Is(err, ErrNotPending) {
			t.Fatalf("cancelled twice: %v", err)
		}
	}
	// A child that ended is no orphan of the turn's end.
	st, c := childTurn(t)
	done := c
	done.Status = TurnCompleted
	st, err := st.Apply(Fact{Seq: 6, Type: ChildEnded, Actor: ag, Turn: "t1", Child: &done},
		Fact{Seq: 7, Type: TurnCancelled, Actor: op, Turn: "t1"})
	if err != nil || len(st.Orphans) != 0 || st.Next(st.Updated, 0).Action != None {
		t.Fatalf("ended child: orphans %+v, %v", st.Orphans, err)
	}
}

// TestChildApprovalAsker: a request a child shows names the child; one
// shown up the chain from a deeper descendant names the turn's child it
// came through and, as its asker, the session that asked.
func TestChildApprovalAsker(t *testing.T) {
	st, c := childTurn(t)
	own := Approval{ID: "ap_own", ToolCallID: "x1", Tool: "hold"}
	deep := Approval{ID: "ap_deep", ToolCallID: "x2", Tool: "hold"}
	ch := Child{ID: c.ID, ToolCallID: c.ToolCallID, Agent: c.Agent}
	st, err := st.Apply(
		Fact{Seq: 6, Type: ChildApproval, Actor: Actor{Kind: ActorAgent, ID: c.ID}, Turn: "t1", Child: &ch, Approval: &own, Asker: c.ID},
		Fact{Seq: 7, Type: ChildApproval, Actor: Actor{Kind: ActorAgent, ID: c.ID}, Turn: "t1", Child: &ch, Approval: &deep, Asker: "s_grand"})
	if err != nil {
		t.Fatal(err)
	}
	r1, ok1 := st.Turn.ChildRequest("ap_own")
	r2, ok2 := st.Turn.ChildRequest("ap_deep")
	if !ok1 || !ok2 || r1.Child != c.ID || r1.Asker() != c.ID || r1.Session != "" || r2.Child != c.ID || r2.Asker() != "s_grand" {
		t.Fatalf("requests %+v %+v", r1, r2)
	}
	if n := st.Next(st.Updated, 0); n.Action != Resume {
		t.Fatalf("with requests to show: %+v, want resume", n)
	}
}

// TestChildShow: a child session suspended with approval requests waits
// to show them to its ancestors (a wake-like need the tick re-sends) until
// child.shown; then it waits for the answer as any session does. A second
// child.shown is refused, and a later request must be shown again. A
// session with no parent never waits to show.
func TestChildShow(t *testing.T) {
	p := Parent{Session: "s1", Turn: "t1", ToolCallID: "tc1", Depth: 1}
	ct := Actor{Kind: ActorAgent, ID: "t9"}
	show := Fact{Type: ChildShown, Actor: Actor{Kind: ActorSystem, ID: "show"}}
	facts := func(parent *Parent) []Fact {
		return []Fact{
			{Seq: 1, Type: SessionCreated, Actor: ag, Agent: "fraud", Owner: "o", Parent: parent},
			{Seq: 2, Type: MessageReceived, Actor: ag, Message: &Message{ID: "m1", Text: "check"}},
			{Seq: 3, Type: TurnStarted, Actor: ct, Turn: "t9", Stream: "t9"},
			{Seq: 4, Type: ApprovalRequested, Actor: ct, Turn: "t9", Approval: &Approval{ID: "ap1", ToolCallID: "x1", Tool: "hold"}},
			{Seq: 5, Type: TurnSuspended, Actor: ct, Turn: "t9", Cause: CauseApproval},
		}
	}
	st, err := Reduce(facts(&p))
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Next(st.Updated, 0); n.Reason != ReasonShow || n.Action != Show {
		t.Fatalf("a child suspended for approval: %+v, want show", n)
	}
	if n := st.Next(st.Updated.Add(time.Hour), time.Minute); n.Action != Rewake {
		t.Fatalf("long after: %+v, want rewake", n)
	}
	show.Seq = 6
	if st, err = st.Apply(show); err != nil {
		t.Fatal(err)
	}
	if n := st.Next(st.Updated, 0); n.Reason != ReasonOperator || n.Action != None {
		t.Fatalf("a child whose request was shown: %+v, want to wait for the operator", n)
	}
	show.Seq = 7
	if _, err := st.Apply(show); !errors.Is(err, ErrNotPending) {
		t.Fatalf("shown twice: %v", err)
	}
	alone, err := Reduce(facts(nil))
	if err != nil {
		t.Fatal(err)
	}
	if n := alone.Next(alone.Updated, 0); n.Reason == ReasonShow {
		t.Fatalf("a session with no parent: %+v", n)
	}
	if _, err := alone.Apply(Fact{Seq: 6, Type: ChildShown, Actor: show.Actor}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("child.shown in a session with no parent: %v", err)
	}
}
