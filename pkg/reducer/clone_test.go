package reducer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestApplyLeavesInputUnchanged is a property test: over random sequences
// of facts of every kind, legal and not, applying facts to a state never
// changes that state (nor anything it points to), nor the facts.
func TestApplyLeavesInputUnchanged(t *testing.T) {
	kinds := map[Type]int{}
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 14))
		g := &factGen{rng: rng, now: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)}
		var s State
		for range 60 {
			facts := g.facts(s)
			before, given := deepCopy(s), deepCopy(facts)
			next, err := s.Apply(facts...)
			if !reflect.DeepEqual(facts, given) {
				t.Fatalf("seed %d: applying %s changed the facts", seed, describeFacts(facts))
			}
			if !reflect.DeepEqual(s, before) {
				b, _ := json.Marshal(before)
				a, _ := json.Marshal(s)
				t.Fatalf("seed %d: applying %s changed the input state\nbefore %s\nafter  %s", seed, describeFacts(facts), b, a)
			}
			if err == nil {
				for _, f := range facts {
					kinds[f.Type]++
				}
				s = next
			}
		}
	}
	// The walk must reach every kind of fact, or it proves little.
	for _, k := range allTypes {
		if kinds[k] == 0 {
			t.Errorf("no legal %s fact was applied in the walk", k)
		}
	}
}

var allTypes = []Type{SessionCreated, MessageReceived, TurnStarted, TurnSuspended, TurnResumed,
	ApprovalRequested, ApprovalAnswered, ExecutionStarted, ExecutionVerdict, TurnCompleted, TurnFailed,
	TurnCancelled, MessageSteered, TurnInterrupted, LimitsRaised, TimerSet, ScheduleSet, ScheduleCleared,
	ScheduleFired, ContextCompacted}

func describeFacts(fs []Fact) string {
	s := ""
	for _, f := range fs {
		s += fmt.Sprintf("%d:%s ", f.Seq, f.Type)
	}
	return s
}

// factGen makes facts that mostly fit the state they follow, so that a
// walk reaches every status, and sometimes do not.
type factGen struct {
	rng *rand.Rand
	now time.Time
	n   int
}

func (g *factGen) facts(s State) []Fact {
	n := 1 + g.rng.IntN(3)
	out := make([]Fact, 0, n)
	seq := s.LastSeq
	for range n {
		seq++
		out = append(out, g.fact(s, seq))
	}
	return out
}

func (g *factGen) id(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

func (g *factGen) fact(s State, seq int64) Fact {
	g.now = g.now.Add(time.Duration(1+g.rng.IntN(90)) * time.Minute)
	f := Fact{Seq: seq, Actor: Actor{Kind: ActorOperator, ID: "op"}, Time: g.now}
	if g.rng.IntN(20) == 0 {
		f.Seq += int64(g.rng.IntN(3)) - 1 // sometimes out of order
	}
	if s.Turn != nil {
		f.Turn = s.Turn.ID
	}
	f.Type = allTypes[g.rng.IntN(len(allTypes))]
	// Some facts fit only a narrow state: favour them when it is reached.
	switch {
	case s.LastSeq == 0 && g.rng.IntN(4) > 0:
		f.Type = SessionCreated
	case s.Turn != nil && s.Status == Running && len(s.Turn.Steer) > 0 && g.rng.IntN(3) == 0:
		f.Type = MessageSteered
	case s.Turn != nil && s.Status == Suspended && s.Turn.Cause == CauseTimer && g.rng.IntN(3) == 0:
		f.Type = TimerSet
	case s.Turn != nil && s.Status == Suspended && s.Turn.Cause == CauseApproval && g.rng.IntN(3) == 0:
		f.Type = ApprovalAnswered
	case s.Turn != nil && s.Status == Suspended && s.Turn.Uncertain != nil && g.rng.IntN(3) == 0:
		f.Type = ExecutionVerdict
	}
	g.fill(&f, s)
	return f
}

func (g *factGen) fill(f *Fact, s State) {
	switch f.Type {
	case SessionCreated:
		f.Agent, f.Owner = "a", "o"
	case MessageReceived:
		d := []Steering{"", SteerEnqueue, SteerSteer, SteerInterrupt}[g.rng.IntN(4)]
		f.Message = &Message{ID: g.id("m"), Text: "hi", Delivery: d}
	case MessageSteered:
		if s.Turn != nil && len(s.Turn.Steer) > 0 {
			f.Steered = []string{s.Turn.Steer[g.rng.IntN(len(s.Turn.Steer))].ID}
		}
	case TurnStarted:
		f.Turn, f.Stream, f.Lease = g.id("t"), g.id("s"), f.Time.Add(time.Minute)
	case TurnSuspended:
		g.suspension(f, s)
	case TurnResumed:
		f.Lease = f.Time.Add(time.Minute)
	case ApprovalRequested:
		f.Approval = &Approval{ID: g.id("ap"), ToolCallID: g.id("c"), Tool: "x", Input: []byte(`{"a":1}`), Expires: f.Time.Add(time.Hour)}
	case ApprovalAnswered:
		f.Answer = &Answer{Decision: []Decision{Approve, Deny}[g.rng.IntN(2)], Reason: "r"}
		if s.Turn != nil && len(s.Turn.Pending) > 0 {
			p := s.Turn.Pending[g.rng.IntN(len(s.Turn.Pending))]
			f.Answer.ApprovalID, f.Answer.ToolCallID = p.ID, p.ToolCallID
		}
	case ExecutionStarted:
		f.Execution = &Execution{ID: g.id("ex"), ToolCallID: g.id("c"), Tool: "x", Idempotent: g.rng.IntN(2) == 0}
	case ExecutionVerdict:
		f.Settled = &Settled{Verdict: []Verdict{Rerun, Abandon}[g.rng.IntN(2)]}
		if s.Turn != nil && s.Turn.Uncertain != nil {
			f.Settled.ExecutionID = s.Turn.Uncertain.ID
		}
	case TurnCompleted, TurnCancelled, TurnInterrupted:
		f.Usage, f.Snapshot = &Usage{InputTokens: 10, OutputTokens: 5, Steps: 2}, g.id("snap")
	case TurnFailed:
		f.Usage, f.Failure = &Usage{InputTokens: 3, Steps: 1}, &Failure{Kind: FailModel, Error: "boom"}
	case LimitsRaised:
		f.Raise = &Raise{Turn: Caps{InputTokens: 100}, Session: Caps{Cost: 1}}
	case TimerSet:
		f.Wake = f.Time.Add(time.Hour)
	case ScheduleSet:
		f.Schedule = &Schedule{Cron: "*/5 * * * *", Text: "tick"}
	case ScheduleFired:
		if s.Schedule != nil {
			f.Wake = s.Schedule.Next()
		}
	case ContextCompacted:
		f.Snapshot = g.id("snap")
		f.Compaction = &Compaction{Turns: 1, Messages: 2, Kept: 1, Usage: Usage{InputTokens: 7, Steps: 1}}
	}
}

func (g *factGen) suspension(f *Fact, s State) {
	causes := []Cause{CauseBudget, CauseApproval, CauseThrottled, CauseUncertain, CauseLease,
		CauseModelUnavailable, CauseToolsUnavailable, CauseLimit, CauseTimer}
	f.Cause = causes[g.rng.IntN(len(causes))]
	f.Usage = &Usage{InputTokens: 4, OutputTokens: 2, Steps: 1}
	switch {
	case f.Cause.Fault():
		f.Faults, f.Wake = 1, f.Time.Add(time.Minute)
	case f.Cause == CauseTimer:
		f.Wake = f.Time.Add(time.Hour)
	case f.Cause == CauseUncertain:
		if s.Turn != nil && len(s.Turn.Executions) > 0 {
			e := s.Turn.Executions[len(s.Turn.Executions)-1]
			f.Execution = &e
		}
	}
}

// deepCopy copies v and everything it points to.
func deepCopy[T any](v T) T {
	var out T
	copyValue(reflect.ValueOf(&out).Elem(), reflect.ValueOf(v))
	return out
}

func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			copyValue(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			v := reflect.New(src.Type().Elem()).Elem()
			copyValue(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	case reflect.Struct:
		dst.Set(src) // unexported fields (time.Time's) hold no references here
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				copyValue(dst.Field(i), src.Field(i))
			}
		}
	default:
		dst.Set(src)
	}
}
