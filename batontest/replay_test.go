package batontest_test

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/pkg/conversation"
)

// deskScripts are the two turns of the recorded desk session, by the
// order their message names: a status read, a refund over 100 (asks for
// approval, claims the order), a note and an answer; then a small refund
// (no approval) and an answer.
var deskScripts = map[string]string{
	"A-1": `{"steps":[
	 {"text":"Looking.","toolCalls":[{"name":"status","input":{"order":"A-1"}}]},
	 {"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"A-1","amount":150}}]},
	 {"reasoning":"Leave a note.","toolCalls":[{"name":"note","input":{"order":"A-1","text":"refunded 150"}}]},
	 {"text":"Refunded 150 on A-1."}]}`,
	"B-2": `{"steps":[
	 {"toolCalls":[{"name":"refund","input":{"order":"B-2","amount":20}}]},
	 {"text":"Refunded 20 on B-2."}]}`,
}

// byOrder plays the script of the order the turn's message names.
type byOrder map[string]baton.Model

func (m byOrder) Stream(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		for _, c := range req.Messages[i].Content {
			if req.Messages[i].Role != conversation.User || c.Type != conversation.Text {
				continue
			}
			for order, model := range m {
				if strings.Contains(c.Text, order) {
					return model.Stream(ctx, req)
				}
			}
		}
	}
	return func(yield func(baton.Event, error) bool) { yield(baton.Event{}, context.Canceled) }
}

// desk is how the desk agent is changed for a replay (zero: as recorded).
type desk struct {
	statusName  string  // the read tool's name; "" is "status"
	needReason  bool    // refund's input gains a required field
	approveOver float64 // refund asks over this amount; 0 is 100
	noNote      bool    // the note tool is gone
	maxSteps    int     // the turn's step cap; 0 is the default
	namespace   string  // refund's claim namespace; "" is "orders"
	status      string  // what status answers; "" is "shipped"
}

// counts are the desk tools' runs.
type counts struct{ status, refund, note atomic.Int64 }

type deskRefund struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
}

type deskRefundWhy struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
	Reason string  `json:"reason"`
}

type deskNote struct {
	Order string `json:"order"`
	Text  string `json:"text"`
}

type deskOrder struct {
	Order string `json:"order"`
}

// config is the desk agent's Config with change d, its tools counting
// their runs in n.
func (d desk) config(t *testing.T, n *counts) host.Config {
	name, over, ns, answer := or(d.statusName, "status"), d.approveOver, or(d.namespace, "orders"), or(d.status, "shipped")
	if over == 0 {
		over = 100
	}
	models := byOrder{}
	for order, s := range deskScripts {
		models[order] = batontest.Script(t, s)
	}
	policy := []baton.ToolOption{baton.Write(), baton.Idempotent(), baton.NeedsApproval(baton.Over("amount", over)),
		baton.Claims(baton.ClaimDecl{Namespace: ns, Field: "order", Access: baton.AccessWrite})}
	refund := baton.Func("refund", "Refund part of an order.", func(ctx context.Context, in deskRefund) (string, error) {
		n.refund.Add(1)
		return "refunded", nil
	}, policy...)
	if d.needReason {
		refund = baton.Func("refund", "Refund part of an order.", func(ctx context.Context, in deskRefundWhy) (string, error) {
			n.refund.Add(1)
			return "refunded", nil
		}, policy...)
	}
	tools := []baton.Tool{
		baton.Func(name, "An order's status.", func(ctx context.Context, in deskOrder) (string, error) {
			n.status.Add(1)
			return answer, nil
		}, baton.Read()),
		refund,
	}
	if !d.noNote {
		tools = append(tools, baton.Func("note", "Note something on an order.", func(ctx context.Context, in deskNote) (string, error) {
			n.note.Add(1)
			return "noted", nil
		}, baton.Write()))
	}
	a := baton.Agent{Name: "desk", Model: models, System: "You are the support desk.", Tools: tools}
	if d.maxSteps > 0 {
		a.Limits.MaxStepsPerTurn = d.maxSteps
	}
	return host.Config{Agents: []baton.Agent{a}}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// recordDesk runs the desk session in a kit, its first refund approved by
// the operator, and exports it as `baton export` does.
func recordDesk(t *testing.T) api.Export {
	t.Helper()
	var n counts
	kit := batontest.New(t, desk{}.config(t, &n))
	s := kit.Session("desk")
	s.Post("Refund A-1 by 150.")
	if out := s.Run(); out.Kind != batontest.Suspended || len(s.Pending()) != 1 {
		t.Fatalf("turn 1: %+v, pending %+v; want the refund's approval", out, s.Pending())
	}
	s.ApproveBecause(s.Pending()[0].ID, "checked")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("turn 1 after approval: %+v", out)
	}
	s.Post("Refund B-2 by 20.")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("turn 2: %+v", out)
	}
	if n.status.Load() != 1 || n.refund.Load() != 2 || n.note.Load() != 1 {
		t.Fatalf("recording ran status %d, refund %d, note %d times; want 1, 2, 1", n.status.Load(), n.refund.Load(), n.note.Load())
	}
	return s.Export()
}

// TestReplayOwnAgent: a recorded session replayed against the agent it
// ran on shows no divergence, and runs no tool: every call answers with
// its recorded result.
func TestReplayOwnAgent(t *testing.T) {
	t.Parallel()
	exp := recordDesk(t)
	var n counts
	r := batontest.Replay(t, exp, desk{}.config(t, &n))
	if len(r.Turns) != 2 || r.Turns[0].RecordedSteps != 4 || r.Turns[0].ReplayedSteps != 4 || r.Turns[1].ReplayedSteps != 2 {
		t.Errorf("turns %+v; want 2 turns of 4 and 2 steps", r.Turns)
	}
	for _, tr := range r.Turns {
		if tr.Recorded != "completed" || tr.Replayed != "completed" || tr.Changed {
			t.Errorf("turn %+v; want completed both times, the agent unchanged", tr)
		}
	}
	if got := n.status.Load() + n.refund.Load() + n.note.Load(); got != 0 {
		t.Errorf("the replay ran tools %d times; want none", got)
	}
	if !strings.Contains(r.String(), "no divergence") {
		t.Errorf("report:\n%s", r)
	}
}

// TestReplayNamesEachChange: replayed against a changed agent, the report
// names each change, at its turn, step and call.
func TestReplayNamesEachChange(t *testing.T) {
	t.Parallel()
	exp := recordDesk(t)
	type want struct {
		turn, step int
		kind       batontest.DivergenceKind
		tool       string
	}
	for _, c := range []struct {
		name   string
		change desk
		opts   []batontest.ReplayOption
		want   []want
	}{
		{"renamed tool", desk{statusName: "order_status"}, nil, []want{{1, 1, batontest.ToolGone, "status"}}},
		{"new required field", desk{needReason: true}, nil, []want{{1, 2, batontest.ToolRefused, "refund"}, {2, 1, batontest.ToolRefused, "refund"}}},
		{"approval rule asks", desk{approveOver: 10}, nil, []want{{2, 1, batontest.RuleChanged, "refund"}}},
		{"approval rule no longer asks", desk{approveOver: 500}, nil, []want{{1, 2, batontest.RuleChanged, "refund"}}},
		{"removed tool", desk{noNote: true}, nil, []want{{1, 3, batontest.ToolGone, "note"}}},
		{"other claims", desk{namespace: "refunds"}, nil, []want{{1, 2, batontest.ClaimChanged, "refund"}, {2, 1, batontest.ClaimChanged, "refund"}}},
		{"fewer steps", desk{maxSteps: 2}, nil, []want{{1, 0, batontest.StepsChanged, ""}, {1, 0, batontest.OutcomeChanged, ""}}},
		{"read result", desk{status: "lost"}, []batontest.ReplayOption{batontest.RunReads()}, []want{{1, 1, batontest.ResultChanged, "status"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var n counts
			r := batontest.ReplayReport(t, exp, c.change.config(t, &n), c.opts...)
			var got []want
			for _, d := range r.Divergences {
				got = append(got, want{d.Turn, d.Step, d.Kind, d.Tool})
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("divergences %+v; want %+v\n%s", got, c.want, r)
			}
			if !r.Failed() {
				t.Errorf("the report does not fail")
			}
			if n.refund.Load()+n.note.Load() != 0 {
				t.Errorf("the replay ran side effects: refund %d, note %d", n.refund.Load(), n.note.Load())
			}
			for _, d := range r.Divergences {
				if d.Detail == "" || !strings.Contains(r.String(), d.String()) {
					t.Errorf("divergence %+v has no detail, or the text lacks it:\n%s", d, r)
				}
			}
		})
	}
}

// fakeTB records a test's failure instead of failing.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

// TestReplayFailsUnlessAccepted: Replay fails the test on a divergence it
// does not accept, naming it, and passes once it is accepted.
func TestReplayFailsUnlessAccepted(t *testing.T) {
	t.Parallel()
	exp := recordDesk(t)
	var n counts
	cfg := desk{noNote: true}.config(t, &n)
	tb := &fakeTB{TB: t}
	batontest.Replay(tb, exp, cfg)
	if !strings.Contains(tb.failed, "tool-gone") || !strings.Contains(tb.failed, "note") {
		t.Errorf("Replay failed with %q; want the tool-gone divergence of note", tb.failed)
	}
	r := batontest.Replay(t, exp, cfg, batontest.Accept(batontest.ToolGone))
	if len(r.Accepted) != 1 || r.Accepted[0].Tool != "note" || r.Failed() {
		t.Errorf("accepted %+v, failed %v; want note's divergence accepted", r.Accepted, r.Failed())
	}
	only := func(d batontest.Divergence) bool { return d.Turn == 2 }
	tb = &fakeTB{TB: t}
	batontest.Replay(tb, exp, cfg, batontest.AcceptIf(only))
	if tb.failed == "" {
		t.Errorf("accepting turn 2's divergences passed turn 1's")
	}
}

// TestReplayAgentFile: a session of an agent file's agent (its tools the
// program's) replays with the file (AgentFile) with no divergence, and
// against a file whose agent lost the tool, the report names it.
func TestReplayAgentFile(t *testing.T) {
	t.Parallel()
	lookup := baton.Func("lookup", "Look an order up.", func(ctx context.Context, in deskOrder) (string, error) {
		return "found " + in.Order, nil
	}, baton.Read())
	cfg := host.Config{Tools: []baton.Tool{lookup}}
	dir := t.TempDir()
	file := func(name, tools string) string {
		p := filepath.Join(dir, name)
		body := `{"agents": {"clerk": {"provider": "scripted", "tools": ` + tools + `, "script": {"steps": [
		  {"toolCalls": [{"name": "lookup", "input": {"order": "C-3"}}]}, {"text": "Found it."}]}}}}`
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	with, without := file("with.json", `["lookup"]`), file("without.json", `[]`)
	kit := batontest.NewWith(t, cfg, batontest.Options{Agents: with})
	s := kit.Session("clerk")
	s.Post("Find C-3.")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("turn: %+v", out)
	}
	exp := s.Export()
	batontest.Replay(t, exp, cfg, batontest.AgentFile(with))
	r := batontest.ReplayReport(t, exp, cfg, batontest.AgentFile(without))
	if len(r.Divergences) != 1 || r.Divergences[0].Kind != batontest.ToolGone || r.Divergences[0].Tool != "lookup" {
		t.Fatalf("report:\n%s", r)
	}
}
