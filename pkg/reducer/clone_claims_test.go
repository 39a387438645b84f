package reducer

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/claims"
)

// TestApplyClaimFactsLeavesInputUnchanged is TestApplyLeavesInputUnchanged
// for the claim facts and blocked suspensions: over random sequences of
// them on a running turn, applying never changes the state or the facts.
func TestApplyClaimFactsLeavesInputUnchanged(t *testing.T) {
	kinds := map[Type]int{}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 19))
		now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
		actor := Actor{Kind: ActorAgent, ID: "t1"}
		s, err := Reduce([]Fact{
			{Seq: 1, Type: SessionCreated, Actor: actor, Time: now, Agent: "a"},
			{Seq: 2, Type: MessageReceived, Actor: actor, Time: now, Message: &Message{ID: "m1", Text: "hi"}},
			{Seq: 3, Type: TurnStarted, Actor: actor, Time: now, Turn: "t1", Stream: "t1", Lease: now.Add(time.Hour)},
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			f := Fact{Seq: s.LastSeq + 1, Actor: actor, Time: now.Add(time.Duration(i) * time.Second), Turn: "t1"}
			switch f.Type = []Type{ClaimGranted, ClaimReleased, ClaimQuarantined, TurnSuspended, TurnResumed}[rng.IntN(5)]; f.Type {
			case ClaimGranted:
				f.Grant = &claims.Grant{ID: []string{"g1", "g2", "g3"}[rng.IntN(3)], Session: "s", ToolCall: "c",
					Claims: []claims.Claim{{Namespace: "orders", Key: "o/1", Access: claims.Write}}}
			case ClaimReleased, ClaimQuarantined:
				if len(s.Grants) > 0 {
					g := s.Grants[rng.IntN(len(s.Grants))]
					f.Grant = &g
				}
			case TurnSuspended:
				f.Cause = CauseBlocked
				f.Block = &claims.Block{ToolCallID: "c2", Tool: "x", Outcome: claims.Blocked,
					Claims: []claims.Claim{{Namespace: "orders", Key: "o", Access: claims.Write}}}
			case TurnResumed:
				f.Lease = f.Time.Add(time.Hour)
			}
			before, given := deepCopy(s), deepCopy(f)
			next, err := s.Apply(f)
			if !reflect.DeepEqual(f, given) {
				t.Fatalf("seed %d: applying %s changed the fact", seed, f.Type)
			}
			if !reflect.DeepEqual(s, before) {
				b, _ := json.Marshal(before)
				a, _ := json.Marshal(s)
				t.Fatalf("seed %d: applying %s changed the input state\nbefore %s\nafter  %s", seed, f.Type, b, a)
			}
			if err == nil {
				kinds[f.Type]++
				s = next
			}
		}
	}
	for _, k := range []Type{ClaimGranted, ClaimReleased, ClaimQuarantined, TurnSuspended, TurnResumed} {
		if kinds[k] == 0 {
			t.Errorf("no legal %s fact was applied", k)
		}
	}
}
