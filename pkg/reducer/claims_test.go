package reducer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/pkg/reducer"
)

func grantFact(b *builder, typ reducer.Type, id string) reducer.Fact {
	g := &claims.Grant{ID: id, Session: "s1", Turn: b.turn, ToolCall: "tc_1",
		Claims: []claims.Claim{{Namespace: "orders", Key: "o-1", Access: claims.Write}}}
	return b.fact(typ, b.agent(), edit(func(f *reducer.Fact) { f.Grant = g }))
}

func blockedFact(b *builder) reducer.Fact {
	return b.suspended(reducer.CauseBlocked, edit(func(f *reducer.Fact) {
		f.Block = &claims.Block{ToolCallID: "tc_2", Tool: "refund", Outcome: claims.Blocked,
			Claims: []claims.Claim{{Namespace: "orders", Key: "o-1", Access: claims.Write}}}
	}))
}

// A grant is held from claim.granted, quarantined by claim.quarantined,
// held again by a new claim.granted (a rerun), and gone after
// claim.released; a blocked suspension shows its block until the resume.
func TestClaimFacts(t *testing.T) {
	b := newBuilder()
	fs := append(b.running(), grantFact(b, reducer.ClaimGranted, "g1"), grantFact(b, reducer.ClaimQuarantined, "g1"))
	st := mustReduce(t, fs)
	if len(st.Grants) != 1 || !st.Grants[0].Quarantined {
		t.Fatalf("grants = %+v, want g1 quarantined", st.Grants)
	}
	fs = append(fs, grantFact(b, reducer.ClaimGranted, "g1"))
	if st = mustReduce(t, fs); len(st.Grants) != 1 || st.Grants[0].Quarantined {
		t.Fatalf("grants after the rerun's grant = %+v", st.Grants)
	}
	fs = append(fs, grantFact(b, reducer.ClaimReleased, "g1"), blockedFact(b))
	st = mustReduce(t, fs)
	if len(st.Grants) != 0 || st.Turn.Cause != reducer.CauseBlocked || st.Turn.Block == nil || st.Turn.Block.ToolCallID != "tc_2" {
		t.Fatalf("after release and block: grants %+v, turn %+v", st.Grants, st.Turn)
	}
	if n := st.Next(b.now, 0); n.Action != reducer.Resume {
		t.Fatalf("a blocked turn needs %v, want resume on its wake", n.Action)
	}
	if st = mustReduce(t, append(fs, b.resumed())); st.Turn.Block != nil {
		t.Fatalf("the block outlived the resume: %+v", st.Turn.Block)
	}
}

func TestClaimFactsIllegal(t *testing.T) {
	cases := []struct {
		name   string
		facts  func(b *builder) []reducer.Fact
		reason string
	}{
		{"granted while suspended", func(b *builder) []reducer.Fact {
			return append(b.suspendedFor(reducer.CauseBudget), grantFact(b, reducer.ClaimGranted, "g1"))
		}, "only a running turn is granted claims"},
		{"released when not held", func(b *builder) []reducer.Fact {
			return append(b.running(), grantFact(b, reducer.ClaimReleased, "g1"))
		}, "grant g1 is not held"},
		{"quarantined when not held", func(b *builder) []reducer.Fact {
			return append(b.running(), grantFact(b, reducer.ClaimQuarantined, "g9"))
		}, "grant g9 is not held"},
		{"blocked without a block", func(b *builder) []reducer.Fact {
			return append(b.running(), b.suspended(reducer.CauseBlocked))
		}, "without the block"},
		{"a grant with a non-canonical key", func(b *builder) []reducer.Fact {
			prefix := b.running()
			f := grantFact(b, reducer.ClaimGranted, "g1")
			f.Grant.Claims[0].Key = "a/../b"
			return append(prefix, f)
		}, "not canonical"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := reducer.Reduce(c.facts(newBuilder()))
			var te *reducer.TransitionError
			if !errors.As(err, &te) || !strings.Contains(te.Reason, c.reason) {
				t.Fatalf("err = %v, want a TransitionError about %q", err, c.reason)
			}
		})
	}
}
