package reducer_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// t0 is the time of the first fact a builder makes.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// leaseFor is how long the builder's invocations hold their turn.
const leaseFor = 5 * time.Minute

var (
	operator = reducer.Actor{Kind: reducer.ActorOperator, ID: "op@example.com"}
	system   = reducer.Actor{Kind: reducer.ActorSystem, ID: "tick"}
)

// builder makes a session's facts: Seq counts up from 1, every fact is one
// second after the last, and turn facts name the turn last started.
type builder struct {
	seq  int64
	now  time.Time
	turn string
}

func newBuilder() *builder { return &builder{now: t0} }

// opt adjusts a fact after the builder filled it in.
type opt func(*reducer.Fact)

func seq(n int64) opt                 { return func(f *reducer.Fact) { f.Seq = n } }
func at(t time.Time) opt              { return func(f *reducer.Fact) { f.Time = t } }
func by(a reducer.Actor) opt          { return func(f *reducer.Fact) { f.Actor = a } }
func turnID(id string) opt            { return func(f *reducer.Fact) { f.Turn = id } }
func lease(t time.Time) opt           { return func(f *reducer.Fact) { f.Lease = t } }
func ofType(t reducer.Type) opt       { return func(f *reducer.Fact) { f.Type = t } }
func edit(fn func(*reducer.Fact)) opt { return fn }
func snapshot(key string) opt         { return func(f *reducer.Fact) { f.Snapshot = key } }
func usage(in, out, steps int64) opt {
	return func(f *reducer.Fact) { f.Usage = &reducer.Usage{InputTokens: in, OutputTokens: out, Steps: steps} }
}
func expires(t time.Time) opt { return func(f *reducer.Fact) { f.Approval.Expires = t } }
func reason(r string) opt     { return func(f *reducer.Fact) { f.Reason = r } }
func fault(n int, wake time.Time) opt {
	return func(f *reducer.Fact) { f.Faults, f.Wake = n, wake }
}
func failure(k reducer.FailureKind) opt {
	return func(f *reducer.Fact) { f.Failure = &reducer.Failure{Kind: k, Error: string(k) + " broke"} }
}

// fact makes the next fact of type typ. Every fact but session.created and
// message.received names the current turn.
func (b *builder) fact(typ reducer.Type, actor reducer.Actor, opts ...opt) reducer.Fact {
	b.seq++
	b.now = b.now.Add(time.Second)
	f := reducer.Fact{Seq: b.seq, Type: typ, Actor: actor, Time: b.now}
	if typ != reducer.SessionCreated && typ != reducer.MessageReceived {
		f.Turn = b.turn
	}
	for _, o := range opts {
		o(&f)
	}
	return f
}

// skip moves the builder's clock on by d.
func (b *builder) skip(d time.Duration) { b.now = b.now.Add(d) }

func (b *builder) created(opts ...opt) reducer.Fact {
	return b.fact(reducer.SessionCreated, operator, append([]opt{edit(func(f *reducer.Fact) {
		f.Agent, f.Owner = "helper", "owner-1"
	})}, opts...)...)
}

func (b *builder) message(id string, opts ...opt) reducer.Fact {
	return b.fact(reducer.MessageReceived, operator, append([]opt{edit(func(f *reducer.Fact) {
		f.Message = &reducer.Message{ID: id, Text: "text of " + id}
	})}, opts...)...)
}

// started starts turn id; later turn facts name it.
func (b *builder) started(id string, opts ...opt) reducer.Fact {
	b.turn = id
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: id}
	return b.fact(reducer.TurnStarted, agent, append([]opt{edit(func(f *reducer.Fact) {
		f.Stream, f.Lease = "stream-"+id, f.Time.Add(leaseFor)
	})}, opts...)...)
}

func (b *builder) agent() reducer.Actor { return reducer.Actor{Kind: reducer.ActorAgent, ID: b.turn} }

func (b *builder) suspended(cause reducer.Cause, opts ...opt) reducer.Fact {
	return b.fact(reducer.TurnSuspended, b.agent(), append([]opt{edit(func(f *reducer.Fact) {
		f.Cause = cause
	})}, opts...)...)
}

func (b *builder) resumed(opts ...opt) reducer.Fact {
	return b.fact(reducer.TurnResumed, b.agent(), append([]opt{edit(func(f *reducer.Fact) {
		f.Lease = f.Time.Add(leaseFor)
	})}, opts...)...)
}

func (b *builder) requested(id, call string, opts ...opt) reducer.Fact {
	return b.fact(reducer.ApprovalRequested, b.agent(), append([]opt{edit(func(f *reducer.Fact) {
		f.Approval = &reducer.Approval{ID: id, ToolCallID: call, Tool: "shell",
			Input: json.RawMessage(`{"cmd":"rm -rf build"}`), Expires: f.Time.Add(time.Hour)}
	})}, opts...)...)
}

func (b *builder) answered(id, call string, d reducer.Decision, opts ...opt) reducer.Fact {
	return b.fact(reducer.ApprovalAnswered, operator, append([]opt{edit(func(f *reducer.Fact) {
		f.Answer = &reducer.Answer{ApprovalID: id, ToolCallID: call, Decision: d}
	})}, opts...)...)
}

func execution(id, call string) *reducer.Execution {
	return &reducer.Execution{ID: id, ToolCallID: call, Tool: "deploy"}
}

// attempt numbers a started or uncertain execution.
func attempt(n int) opt {
	return func(f *reducer.Fact) { f.Execution.Attempt = n }
}

func (b *builder) execStarted(id, call string, opts ...opt) reducer.Fact {
	return b.fact(reducer.ExecutionStarted, b.agent(), append([]opt{edit(func(f *reducer.Fact) {
		f.Execution = execution(id, call)
	})}, opts...)...)
}

// uncertain suspends the turn on execution id.
func (b *builder) uncertain(id, call string, opts ...opt) reducer.Fact {
	return b.suspended(reducer.CauseUncertain, append([]opt{edit(func(f *reducer.Fact) {
		f.Execution = execution(id, call)
	})}, opts...)...)
}

func (b *builder) verdict(id string, v reducer.Verdict, opts ...opt) reducer.Fact {
	return b.fact(reducer.ExecutionVerdict, operator, append([]opt{edit(func(f *reducer.Fact) {
		f.Settled = &reducer.Settled{ExecutionID: id, Verdict: v}
	})}, opts...)...)
}

func (b *builder) completed(opts ...opt) reducer.Fact {
	return b.fact(reducer.TurnCompleted, b.agent(), opts...)
}

func (b *builder) failed(opts ...opt) reducer.Fact {
	return b.fact(reducer.TurnFailed, b.agent(), append([]opt{failure(reducer.FailModel)}, opts...)...)
}

func delivery(d reducer.Steering) opt {
	return func(f *reducer.Fact) { f.Message.Delivery = d }
}

func (b *builder) steered(ids ...string) reducer.Fact {
	return b.fact(reducer.MessageSteered, b.agent(), edit(func(f *reducer.Fact) { f.Steered = ids }))
}

func (b *builder) interrupted(opts ...opt) reducer.Fact {
	return b.fact(reducer.TurnInterrupted, b.agent(), opts...)
}

func (b *builder) cancelled(opts ...opt) reducer.Fact {
	return b.fact(reducer.TurnCancelled, operator, append([]opt{reason("operator gave up")}, opts...)...)
}

// Prefixes: each returns the facts leading to a common situation.

// idle: a created session with an empty inbox.
func (b *builder) idle() []reducer.Fact { return []reducer.Fact{b.created()} }

// running: turn t1 started on one message.
func (b *builder) running() []reducer.Fact {
	return append(b.idle(), b.message("m1"), b.started("t1"))
}

// suspendedFor: t1 suspended for cause (budget, throttled, lease).
func (b *builder) suspendedFor(cause reducer.Cause) []reducer.Fact {
	return append(b.running(), b.suspended(cause))
}

// awaitingApprovals: t1 suspended for approval of a1/call-1 and a2/call-2.
func (b *builder) awaitingApprovals() []reducer.Fact {
	return append(b.running(), b.requested("a1", "call-1"), b.requested("a2", "call-2"),
		b.suspended(reducer.CauseApproval))
}

// awaitingVerdict: t1 suspended as uncertain about execution x1/call-9.
func (b *builder) awaitingVerdict() []reducer.Fact {
	return append(b.running(), b.execStarted("x1", "call-9"), b.uncertain("x1", "call-9"))
}

func mustReduce(t *testing.T, facts []reducer.Fact) reducer.State {
	t.Helper()
	s, err := reducer.Reduce(facts)
	if err != nil {
		t.Fatalf("reducing the prefix: %v", err)
	}
	return s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

// sameJSON fails unless a and b marshal alike.
func sameJSON(t *testing.T, what string, a, b any) {
	t.Helper()
	if ja, jb := mustJSON(t, a), mustJSON(t, b); ja != jb {
		t.Errorf("%s differ:\n got %s\nwant %s", what, ja, jb)
	}
}

// unchanged fails if applying mutated the state or facts applied: both must
// still equal their twins, built independently from the same builder run.
func unchanged(t *testing.T, before, twin reducer.State, facts, factsTwin []reducer.Fact) {
	t.Helper()
	if !reflect.DeepEqual(before, twin) {
		t.Errorf("Apply mutated its input state:\n got %s\nwant %s", mustJSON(t, before), mustJSON(t, twin))
	}
	if !reflect.DeepEqual(facts, factsTwin) {
		t.Errorf("Apply mutated the facts applied:\n got %s\nwant %s", mustJSON(t, facts), mustJSON(t, factsTwin))
	}
}
