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
