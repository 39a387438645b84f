package turn_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// The fingerprint is the same for the same definition and changes with
// each part of it a deploy may change.
func TestFingerprintFollowsTheDefinition(t *testing.T) {
	t.Parallel()
	m := script(t, `{"steps":[{"text":"hi"}]}`)
	base := func() *turn.Agent { return demoAgent(t, m, turn.Limits{}) }
	fp := turn.Fingerprint(base())
	if fp != turn.Fingerprint(base()) {
		t.Fatal("two builds of one definition have different fingerprints")
	}
	retool := func(edit func(*tool.Tool)) func(*turn.Agent) {
		return func(a *turn.Agent) {
			ts := a.Tools.Tools()
			edit(&ts[0])
			reg, err := tool.NewRegistry(ts...)
			if err != nil {
				t.Fatal(err)
			}
			a.Tools = reg
		}
	}
	for name, change := range map[string]func(*turn.Agent){
		"prompt":       func(a *turn.Agent) { a.System += " Be brief." },
		"limits":       func(a *turn.Agent) { a.Limits.Budget = 42 * time.Second },
		"renamed tool": retool(func(tl *tool.Tool) { tl.Name += "_v2" }),
		"schema": retool(func(tl *tool.Tool) {
			tl.Schema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city","unit"]}`)
		}),
		"effect":   retool(func(tl *tool.Tool) { tl.Effect = tool.Write }),
		"approval": retool(func(tl *tool.Tool) { tl.NeedsApproval = func(json.RawMessage) bool { return true } }),
	} {
		a := base()
		change(a)
		if got := turn.Fingerprint(a); got == fp {
			t.Errorf("%s: the fingerprint did not change (%s)", name, got)
		}
	}
}

// Each invocation records the agent's fingerprint and the build; a turn
// resumed on a changed agent is flagged.
func TestTurnRecordsItsVersion(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent := demoAgent(t, script(t, `{"steps":[
	 {"text":"Emailing.","toolCalls":[{"name":"send_email","input":{"to":"a@example.com","subject":"A"}}]},
	 {"text":"Done."}]}`), turn.Limits{})
	inv := fresh(t, agent)
	inv.runner.Build = "7"
	id := newSession(t, inv, "Email a.")
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Cause != reducer.CauseApproval {
		t.Fatalf("start: %+v %v", out, err)
	}
	started := turn.Fingerprint(agent)
	st, _ := reducer.Reduce(facts(t, inv, id))
	if v := st.Turn.Version; v.Fingerprint != started || v.Build != "7" || st.Turn.Changed {
		t.Fatalf("the turn's version %+v (changed %v), want %s on build 7", v, st.Turn.Changed, started)
	}
	// A deploy while the turn waits: a new prompt, a new build.
	agent.System += " Sign every email."
	inv.runner.Build = "8"
	if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: st.Turn.Pending[0].ID, Decision: reducer.Approve}); err != nil {
		t.Fatal(err)
	}
	if out, err := inv.runner.Resume(ctx, id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume: %+v %v", out, err)
	}
	fs := facts(t, inv, id)
	var resumed *reducer.Fact
	for i := range fs {
		if fs[i].Type == reducer.TurnResumed {
			resumed = &fs[i]
		}
	}
	if resumed == nil || resumed.Version == nil || resumed.Version.Fingerprint != turn.Fingerprint(agent) || resumed.Version.Build != "8" ||
		resumed.Version.Fingerprint == started {
		t.Fatalf("turn.resumed records %+v, want the changed agent on build 8", resumed)
	}
	st, _ = reducer.Reduce(fs[:resumed.Seq])
	if !st.Turn.Changed || st.Turn.Latest != *resumed.Version || st.Turn.Version.Fingerprint != started {
		t.Fatalf("after the resume: version %+v, latest %+v, changed %v", st.Turn.Version, st.Turn.Latest, st.Turn.Changed)
	}
}

// An approval binds the call to the tool as it was: a deploy that changes
// the tool's effect while the approved call waits asks the operator
// again, and the call runs only once approved as the tool now stands.
func TestApprovalOfAChangedToolAsksAgain(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent := demoAgent(t, script(t, `{"steps":[
	 {"text":"Emailing.","toolCalls":[{"name":"send_email","input":{"to":"a@example.com","subject":"A"}}]},
	 {"text":"Done."}]}`), turn.Limits{})
	inv := fresh(t, agent)
	id := newSession(t, inv, "Email a.")
	if out, err := inv.runner.Start(ctx, id); err != nil || out.Cause != reducer.CauseApproval {
		t.Fatalf("start: %+v %v", out, err)
	}
	st, _ := reducer.Reduce(facts(t, inv, id))
	first := st.Turn.Pending[0]
	if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: first.ID, Decision: reducer.Approve}); err != nil {
		t.Fatal(err)
	}
	// The deploy: send_email's effect changes before the resume.
	ts := agent.Tools.Tools()
	for i := range ts {
		if ts[i].Name == "send_email" {
			ts[i].Effect = tool.Write
			ts[i].Idempotent = false
		}
	}
	reg, err := tool.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	agent.Tools = reg
	out, err := inv.runner.Resume(ctx, id)
	if err != nil || out.Cause != reducer.CauseApproval {
		t.Fatalf("resume after the deploy: %+v %v, want the call asked again", out, err)
	}
	st, _ = reducer.Reduce(facts(t, inv, id))
	if len(st.Turn.Pending) != 1 || st.Turn.Pending[0].ID != first.ID+"_changed" || len(st.Turn.Executions) != 0 {
		t.Fatalf("pending %+v, executions %+v: want the call asked again, not run", st.Turn.Pending, st.Turn.Executions)
	}
	if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: first.ID + "_changed", Decision: reducer.Approve}); err != nil {
		t.Fatal(err)
	}
	if out, err := inv.runner.Resume(ctx, id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume after the second approval: %+v %v", out, err)
	}
	st, _ = reducer.Reduce(facts(t, inv, id))
	if n := count(facts(t, inv, id), reducer.ExecutionStarted); n != 1 {
		t.Fatalf("%d executions of the re-approved call, want 1", n)
	}
}
