package reducer_test

import (
	"testing"

	"github.com/baton-run/baton/pkg/reducer"
)

// An answer records who gave it from the fact's actor: a By written into
// the fact's answer does not stand.
func TestAnswerRecordsItsActor(t *testing.T) {
	b := newBuilder()
	facts := append(b.awaitingApprovals(), b.answered("a1", "call-1", reducer.Approve,
		edit(func(f *reducer.Fact) { f.Answer.By = "mallory" }), by(reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"})))
	s, err := reducer.Reduce(facts)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := s.Turn.Answer("call-1"); !ok || a.By != "alice" {
		t.Fatalf("answer %+v, %v; want by alice", a, ok)
	}
}
