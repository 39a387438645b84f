package reducer_test

import (
	"errors"
	"testing"

	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/pkg/reducer"
)

func (b *builder) decided(r guard.Record) reducer.Fact {
	return b.fact(reducer.GuardDecided, b.agent(), edit(func(f *reducer.Fact) { f.Guard = &r }))
}

func in(name string, a guard.Action, opts ...func(*guard.Record)) guard.Record {
	r := guard.Record{Guardrail: name, Stage: guard.Input, Decision: guard.Decision{Action: a}, Message: "m1"}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// A redaction or block of an input message replaces its text in the
// turn's messages, so no model request sees the original.
func TestGuardRewritesTheMessage(t *testing.T) {
	t.Parallel()
	b := newBuilder()
	s := mustReduce(t, append(b.running(), b.decided(in("pii", guard.Redact, func(r *guard.Record) { r.Text = "text of [x]" }))))
	if got := s.Turn.Messages[0].Text; got != "text of [x]" {
		t.Fatalf("message %q, want the redaction", got)
	}
	b = newBuilder()
	s = mustReduce(t, append(b.running(), b.decided(in("pii", guard.Block, func(r *guard.Record) { r.Reason = "no" }))))
	if got := s.Turn.Messages[0].Text; got != guard.Placeholder("pii") {
		t.Fatalf("message %q, want the placeholder", got)
	}
	if r, ok := s.Turn.Guard("pii", guard.Input, "m1", 0); !ok || r.Reason != "no" {
		t.Fatalf("Guard = %+v, %v", r, ok)
	}
}

// Guard decisions that are not whole, or not the running turn's, are
// illegal and change nothing.
func TestGuardIllegal(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]guard.Record{
		"no name":               in("", guard.Allow),
		"bad stage":             {Guardrail: "g", Stage: "side", Decision: guard.Decision{Action: guard.Allow}},
		"bad action":            in("g", "maybe"),
		"redact without text":   in("g", guard.Redact),
		"unknown message":       in("g", guard.Allow, func(r *guard.Record) { r.Message = "m9" }),
		"escalate, no approval": in("g", guard.Escalate),
		"block with approval":   in("g", guard.Block, func(r *guard.Record) { r.Approval, r.Call = "ap_x", "gr_x" }),
		"held too large":        in("g", guard.Escalate, func(r *guard.Record) { r.Approval, r.Call, r.Held = "ap", "gr", make([]byte, guard.MaxHeld+1) }),
	} {
		b := newBuilder()
		prefix := b.running()
		if _, err := reducer.Reduce(append(prefix, b.decided(r))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	b := newBuilder()
	if _, err := reducer.Reduce(append(b.suspendedFor(reducer.CauseBudget), b.decided(in("g", guard.Allow)))); err == nil {
		t.Error("a suspended turn's guardrail decided")
	}
}

// An escalation's approval takes approve or deny: an edit or a response
// is refused and writes nothing.
func TestGuardEscalationTakesApproveOrDeny(t *testing.T) {
	t.Parallel()
	b := newBuilder()
	call := guard.CallID("t1", 0)
	facts := append(b.running(),
		b.decided(in("g", guard.Escalate, func(r *guard.Record) { r.Approval, r.Call = "ap_"+call, call })),
		b.fact(reducer.ApprovalRequested, b.agent(), edit(func(f *reducer.Fact) {
			f.Approval = &reducer.Approval{ID: "ap_" + call, ToolCallID: call, Tool: guard.ToolPrefix + "g", Input: []byte(`{}`)}
		})),
		b.suspended(reducer.CauseApproval))
	s := mustReduce(t, facts)
	for _, d := range []reducer.Answer{
		{ApprovalID: "ap_" + call, ToolCallID: call, Decision: reducer.Edit, Input: []byte(`{"a":1}`)},
		{ApprovalID: "ap_" + call, ToolCallID: call, Decision: reducer.Respond, Output: []byte(`"x"`)},
	} {
		f := b.fact(reducer.ApprovalAnswered, operator, seq(s.LastSeq+1), edit(func(f *reducer.Fact) { f.Answer = &d }))
		if _, err := s.Apply(f); !errors.Is(err, reducer.ErrBadAnswer) {
			t.Errorf("%s: %v, want ErrBadAnswer", d.Decision, err)
		}
	}
	ok := b.fact(reducer.ApprovalAnswered, operator, seq(s.LastSeq+1), edit(func(f *reducer.Fact) {
		f.Answer = &reducer.Answer{ApprovalID: "ap_" + call, ToolCallID: call, Decision: reducer.Approve}
	}))
	if _, err := s.Apply(ok); err != nil {
		t.Fatalf("approve: %v", err)
	}
}
