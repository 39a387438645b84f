package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// builds is two deploys of one agent on one store: build 1, the agent as
// the turn started on it, and build 2, the agent after a change. Each
// tool counts its runs, so a test sees which definition ran a call.
type builds struct {
	one, two *invocation
	v1, v2   *turn.Agent
	ran      [3]atomic.Int32 // by build
	// handed are the wakes build 2 handed to build 1 (Pins).
	handed []wake.Wake
	// gone makes build 1 unreachable: Hand fails with ErrBuildGone.
	gone bool
}

func (b *builds) Hand(_ context.Context, build string, w wake.Wake) error {
	if b.gone || build != "1" {
		return fmt.Errorf("lambda: function version %s: %w", build, turn.ErrBuildGone)
	}
	b.handed = append(b.handed, w)
	return nil
}

// lookupAgent is an agent whose one tool, lookup, reads a city's data and
// needs approval for every call; build counts its runs in b.
func lookupAgent(t *testing.T, b *builds, build int, policy reducer.OnChange, change func(*turn.Agent, *tool.Tool)) *turn.Agent {
	t.Helper()
	m := script(t, `{"steps":[
	 {"text":"Looking it up.","toolCalls":[{"name":"lookup","input":{"city":"Paris"}}]},
	 {"text":"Done."}]}`)
	lookup := tool.Tool{
		Name: "lookup", Description: "Look a city up.", Effect: tool.Read,
		Schema:        json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`),
		NeedsApproval: func(json.RawMessage) bool { return true },
		Run: func(context.Context, tool.Call) (json.RawMessage, error) {
			b.ran[build].Add(1)
			return json.RawMessage(`{"population":2100000}`), nil
		},
	}
	a := &turn.Agent{Name: "demo", System: "You look cities up.", Model: m, MaxTokens: 1024, OnChange: policy}
	if change != nil {
		change(a, &lookup)
	}
	reg, err := tool.NewRegistry(lookup)
	if err != nil {
		t.Fatal(err)
	}
	a.Tools = reg
	return a
}

// The deploy changes of the table.
var deployChanges = []struct {
	name   string
	change func(*turn.Agent, *tool.Tool)
}{
	{"prompt", func(a *turn.Agent, _ *tool.Tool) { a.System += " Answer in French." }},
	{"renamed", func(_ *turn.Agent, tl *tool.Tool) { tl.Name = "city_lookup" }},
	{"required field", func(_ *turn.Agent, tl *tool.Tool) {
		tl.Schema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"country":{"type":"string"}},"required":["city","country"],"additionalProperties":false}`)
	}},
	{"read to write", func(_ *turn.Agent, tl *tool.Tool) { tl.Effect = tool.Write }},
}

// newBuilds starts a turn on build 1 of an agent with policy, suspended
// for the approval of its one lookup call, approves it, and deploys
// build 2 with change.
func newBuilds(t *testing.T, policy reducer.OnChange, change func(*turn.Agent, *tool.Tool)) (*builds, string) {
	t.Helper()
	ctx := ctxT(t)
	b := &builds{}
	b.v1 = lookupAgent(t, b, 1, policy, nil)
	b.v2 = lookupAgent(t, b, 2, policy, change)
	b.one, b.two = fresh(t, b.v1), fresh(t, b.v2)
	b.one.runner.Build, b.two.runner.Build = "1", "2"
	b.two.runner.Pins = b
	id := newSession(t, b.one, "How many people live in Paris?")
	if out, err := b.one.runner.Start(ctx, id); err != nil || out.Cause != reducer.CauseApproval {
		t.Fatalf("start on build 1: %+v %v", out, err)
	}
	st, _ := reducer.Reduce(facts(t, b.one, id))
	if err := b.one.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: st.Turn.Pending[0].ID, Decision: reducer.Approve}); err != nil {
		t.Fatal(err)
	}
	return b, id
}

// TestOnChangeTable: one turn suspended for the approval of a call, four
// deploy changes while it waits (the system prompt, the tool renamed, a
// new required field in its schema, its effect from read to write) under
// each policy (continue, fail, pin). No cell runs a call on a definition
// the operator did not approve it on: the only runs on build 2 are of a
// tool unchanged since its approval (a new prompt), or re-approved as it
// now stands; pin runs the call on build 1, as approved.
func TestOnChangeTable(t *testing.T) {
	t.Parallel()
	type want struct {
		kind        turn.Kind
		failure     bool   // turn.failed, kind changed
		ran1, ran2  int32  // the tool's runs on build 1 and on build 2
		stale       string // the call.stale cause recorded
		errorResult string // in the model's error result
		askedAgain  bool   // pending as <id>_changed
	}
	cells := map[string]map[reducer.OnChange]want{
		"prompt": {
			reducer.OnChangeContinue: {kind: turn.Completed, ran2: 1},
			reducer.OnChangeFail:     {kind: turn.Failed, failure: true},
			reducer.OnChangePin:      {kind: turn.Completed, ran1: 1},
		},
		"renamed": {
			reducer.OnChangeContinue: {kind: turn.Completed, stale: reducer.StaleRemoved, errorResult: `unknown tool "lookup"`},
			reducer.OnChangeFail:     {kind: turn.Failed, failure: true},
			reducer.OnChangePin:      {kind: turn.Completed, ran1: 1},
		},
		"required field": {
			reducer.OnChangeContinue: {kind: turn.Completed, stale: reducer.StaleSchema, errorResult: "country"},
			reducer.OnChangeFail:     {kind: turn.Failed, failure: true},
			reducer.OnChangePin:      {kind: turn.Completed, ran1: 1},
		},
		"read to write": {
			reducer.OnChangeContinue: {kind: turn.Suspended, stale: reducer.StaleChanged, askedAgain: true},
			reducer.OnChangeFail:     {kind: turn.Failed, failure: true},
			reducer.OnChangePin:      {kind: turn.Completed, ran1: 1},
		},
	}
	for _, dc := range deployChanges {
		for _, policy := range []reducer.OnChange{reducer.OnChangeContinue, reducer.OnChangeFail, reducer.OnChangePin} {
			w := cells[dc.name][policy]
			t.Run(dc.name+"/"+string(policy), func(t *testing.T) {
				t.Parallel()
				ctx := ctxT(t)
				b, id := newBuilds(t, policy, dc.change)
				out, err := b.two.runner.Resume(ctx, id)
				if err != nil {
					t.Fatalf("resume on build 2: %v", err)
				}
				if policy == reducer.OnChangePin {
					// Build 2 hands the turn to build 1, which resumes it
					// as the handed wake's invocation would.
					if out.Kind != turn.Handed || out.Build != "1" || len(b.handed) != 1 || b.handed[0].Session != id {
						t.Fatalf("resume on build 2: %+v, handed %+v: want the turn handed to build 1", out, b.handed)
					}
					if fs := facts(t, b.two, id); fs[len(fs)-1].Type != reducer.ApprovalAnswered {
						t.Fatalf("build 2 wrote %s handing the turn over, want nothing", fs[len(fs)-1].Type)
					}
					if out, err = b.one.runner.Resume(ctx, id); err != nil {
						t.Fatalf("resume on build 1: %v", err)
					}
				}
				if out.Kind != w.kind {
					t.Fatalf("outcome %+v, want %s", out, w.kind)
				}
				if got1, got2 := b.ran[1].Load(), b.ran[2].Load(); got1 != w.ran1 || got2 != w.ran2 {
					t.Fatalf("the tool ran %d time(s) on build 1 and %d on build 2, want %d and %d", got1, got2, w.ran1, w.ran2)
				}
				fs := facts(t, b.one, id)
				st, err := reducer.Reduce(fs)
				if err != nil {
					t.Fatal(err)
				}
				var resumed *reducer.Fact
				for i := range fs {
					if fs[i].Type == reducer.TurnResumed {
						resumed = &fs[i]
					}
				}
				switch {
				case resumed == nil || resumed.Version == nil:
					t.Fatal("no turn.resumed with a version")
				case policy == reducer.OnChangePin && (resumed.Version.Build != "1" || resumed.Version.Fingerprint != turn.Fingerprint(b.v1)):
					t.Fatalf("pinned: turn.resumed records %+v, want build 1's definition", resumed.Version)
				case policy != reducer.OnChangePin && (resumed.Version.Build != "2" || resumed.Version.Fingerprint != turn.Fingerprint(b.v2)):
					t.Fatalf("turn.resumed records %+v, want build 2's definition", resumed.Version)
				case resumed.Version.OnChange != policy:
					t.Fatalf("turn.resumed records the policy %q, want %q", resumed.Version.OnChange, policy)
				}
				if w.failure {
					if st.LastFailure == nil || st.LastFailure.Kind != reducer.FailChanged || !strings.Contains(st.LastFailure.Error, "policy is fail") {
						t.Fatalf("failure %+v, want kind changed naming the policy", st.LastFailure)
					}
				}
				var stale []reducer.Stale
				for _, f := range fs {
					if f.Type == reducer.CallStale {
						stale = append(stale, f.Stale...)
					}
				}
				if w.stale == "" && len(stale) != 0 || w.stale != "" && (len(stale) != 1 || stale[0].Cause != w.stale || stale[0].Tool != "lookup") {
					t.Fatalf("call.stale %+v, want cause %q", stale, w.stale)
				}
				if w.errorResult != "" {
					ps, _ := readParts(t, b.one, id, out.Turn)
					var texts []string
					for _, p := range ps {
						if p.Type == parts.ToolOutputError {
							texts = append(texts, p.ErrorText)
						}
					}
					if len(texts) != 1 || !strings.Contains(texts[0], w.errorResult) {
						t.Fatalf("the model's error results %q, want one naming %q", texts, w.errorResult)
					}
				}
				if w.askedAgain {
					if len(st.Turn.Pending) != 1 || !strings.HasSuffix(st.Turn.Pending[0].ID, "_changed") || st.Turn.Pending[0].Print != turn.ToolPrint(mustTool(t, b.v2, "lookup")) {
						t.Fatalf("pending %+v, want the call asked again for the tool as it now stands", st.Turn.Pending)
					}
					// Approved as it now stands, it runs once, on build 2.
					if err := b.two.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: st.Turn.Pending[0].ID, Decision: reducer.Approve}); err != nil {
						t.Fatal(err)
					}
					if out, err := b.two.runner.Resume(ctx, id); err != nil || out.Kind != turn.Completed {
						t.Fatalf("resume after the second approval: %+v %v", out, err)
					}
					if n := b.ran[2].Load(); n != 1 || b.ran[1].Load() != 0 {
						t.Fatalf("the re-approved call ran %d time(s) on build 2, want once", n)
					}
				}
			})
		}
	}
}

func mustTool(t *testing.T, a *turn.Agent, name string) tool.Tool {
	t.Helper()
	tl, ok := a.Tools.Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl
}

// A pinned turn whose build is gone fails, naming the build, when the
// agent changed since it started; when only the build changed (the same
// definition), it runs on the build it landed on.
func TestPinnedBuildGone(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(*turn.Agent, *tool.Tool){
		"changed": deployChanges[0].change,
		"same":    nil,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			b, id := newBuilds(t, reducer.OnChangePin, change)
			b.gone = true
			out, err := b.two.runner.Resume(ctx, id)
			if err != nil {
				t.Fatalf("resume on build 2: %v", err)
			}
			st, _ := reducer.Reduce(facts(t, b.two, id))
			if change == nil {
				if out.Kind != turn.Completed || b.ran[2].Load() != 1 || st.LastFailure != nil {
					t.Fatalf("outcome %+v, %d run(s) on build 2: want it completed there", out, b.ran[2].Load())
				}
				return
			}
			if out.Kind != turn.Failed || st.LastFailure == nil || st.LastFailure.Kind != reducer.FailChanged ||
				!strings.Contains(st.LastFailure.Error, "pinned to build 1, which is gone") || b.ran[1].Load()+b.ran[2].Load() != 0 {
				t.Fatalf("outcome %+v, failure %+v, runs %d/%d: want it failed naming build 1, nothing run", out, st.LastFailure, b.ran[1].Load(), b.ran[2].Load())
			}
		})
	}
}

// A pinned turn whose own build now runs a changed definition (an agent
// file read from S3, or a build that is not a published version, such as
// "local") fails: the definition it started on runs nowhere.
func TestPinnedDefinitionGone(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	b, id := newBuilds(t, reducer.OnChangePin, deployChanges[1].change)
	b.two.runner.Build = "1"
	out, err := b.two.runner.Resume(ctx, id)
	st, _ := reducer.Reduce(facts(t, b.two, id))
	if err != nil || out.Kind != turn.Failed || st.LastFailure == nil || st.LastFailure.Kind != reducer.FailChanged ||
		!strings.Contains(st.LastFailure.Error, "pinned to build 1, which now runs a changed agent") || len(b.handed) != 0 || b.ran[1].Load()+b.ran[2].Load() != 0 {
		t.Fatalf("resume: %+v %v, failure %+v, handed %v: want it failed, nothing handed or run", out, err, st.LastFailure, b.handed)
	}
}

// A store error handing the turn over is the wake's to retry: nothing is
// written.
func TestPinHandOffErrorIsRetried(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	b, id := newBuilds(t, reducer.OnChangePin, nil)
	before := len(facts(t, b.two, id))
	b.two.runner.Pins = pinsFunc(func(context.Context, string, wake.Wake) error { return errors.New("throttled") })
	if _, err := b.two.runner.Resume(ctx, id); err == nil || !strings.Contains(err.Error(), "build 1") {
		t.Fatalf("resume: %v, want the hand-off's error naming build 1", err)
	}
	if n := len(facts(t, b.two, id)); n != before {
		t.Fatalf("%d facts written by a failed hand-off", n-before)
	}
}

type pinsFunc func(context.Context, string, wake.Wake) error

func (f pinsFunc) Hand(ctx context.Context, build string, w wake.Wake) error { return f(ctx, build, w) }

// An uncertain execution (a side effect cut short by a kill) of a tool a
// deploy changed never runs as it was: a tool gone gives the model an
// error result (recorded stale), and a tool that became a read stays in
// the execution ledger, waiting for an operator's verdict, instead of
// running again as a read.
func TestUncertainExecutionOfAChangedTool(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		idempotent bool
		change     func(*tool.Tool)
		kind       turn.Kind
		stale      string
	}{
		"removed":              {change: func(tl *tool.Tool) { tl.Name = "charge_card" }, kind: turn.Completed, stale: reducer.StaleRemoved},
		"removed, idempotent":  {idempotent: true, change: func(tl *tool.Tool) { tl.Name = "charge_card" }, kind: turn.Completed, stale: reducer.StaleRemoved},
		"now a read":           {change: func(tl *tool.Tool) { tl.Effect = tool.Read }, kind: turn.Suspended},
		"now requires a field": {idempotent: true, change: func(tl *tool.Tool) { tl.Schema = json.RawMessage(`{"type":"object","required":["amount","card"]}`) }, kind: turn.Completed, stale: reducer.StaleSchema},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			agent, ch, inv, id := killMidExecution(t, c.idempotent)
			ts := agent.Tools.Tools()
			c.change(&ts[0])
			reg, err := tool.NewRegistry(ts...)
			if err != nil {
				t.Fatal(err)
			}
			deployed := *agent
			deployed.Tools = reg
			out, err := fresh(t, &deployed).runner.Resume(ctx, id)
			if err != nil || out.Kind != c.kind {
				t.Fatalf("resume on the changed agent: %+v %v, want %s", out, err, c.kind)
			}
			if len(ch.keys) != 1 {
				t.Fatalf("the charge ran %d times, want once (before the kill)", len(ch.keys))
			}
			st, _ := reducer.Reduce(facts(t, inv, id))
			if c.kind == turn.Suspended && (st.Turn == nil || st.Turn.Cause != reducer.CauseUncertain) {
				t.Fatalf("state %+v, want suspended for a verdict", st.Turn)
			}
			if c.stale != "" && (len(st.Stale) != 1 || st.Stale[0].Cause != c.stale) {
				t.Fatalf("stale %+v, want %s", st.Stale, c.stale)
			}
		})
	}
}

// A callback handed out before a deploy removed its tool belongs to the
// outside system that holds it: its result, when it comes, is the call's
// (the effect ran once, before the deploy), and nothing runs again.
func TestCallbackOfARemovedTool(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	var runs atomic.Int32
	build := tool.Tool{
		Name: "start_build", Description: "Start a CI build.", Effect: tool.External,
		Schema:   json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`),
		Callback: &callback.Policy{Timeout: time.Hour},
		Run: func(ctx context.Context, _ tool.Call) (json.RawMessage, error) {
			runs.Add(1)
			if _, err := callback.Open(ctx); err != nil {
				return nil, err
			}
			return nil, callback.ErrPending
		},
	}
	reg, err := tool.NewRegistry(build)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You start builds.", Tools: reg, Model: script(t, `{"steps":[
	 {"text":"Building.","toolCalls":[{"name":"start_build","input":{"ref":"main"}}]},
	 {"text":"Built."}]}`)}
	inv := fresh(t, agent)
	id := newSession(t, inv, "Build main.")
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Cause != reducer.CauseCallback {
		t.Fatalf("start: %+v %v, want suspended for the callback", out, err)
	}
	// The deploy removes the tool; the outside system then completes.
	build.Name = "start_ci_build"
	if reg, err = tool.NewRegistry(build); err != nil {
		t.Fatal(err)
	}
	deployed := *agent
	deployed.Tools = reg
	st, _ := reducer.Reduce(facts(t, inv, id))
	call := st.Turn.Callbacks[0].ToolCallID
	if err := inv.sessions.CompleteCall(ctx, id, call, operator, callback.Result{Output: json.RawMessage(`{"status":"passed"}`)}, ""); err != nil {
		t.Fatal(err)
	}
	if out, err = fresh(t, &deployed).runner.Resume(ctx, id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume on the changed agent: %+v %v", out, err)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	if got := outputsFor(ps, call); len(got) != 1 || got[0].Type != parts.ToolOutputAvailable || string(got[0].Output) != `{"status":"passed"}` || runs.Load() != 1 {
		t.Fatalf("results %+v after %d run(s), want the callback's result and one run", got, runs.Load())
	}
}
