package replay_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/replay"
	"github.com/baton-run/baton/internal/replay/report"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// rig records sessions in memory, on the test's clock, as the resume
// function runs them.
type rig struct {
	mem    *teststack.Memory
	ss     *session.Store
	worker *worker.Worker
}

func newRig(t testing.TB, agents turn.AgentMap) *rig {
	t.Helper()
	mem := teststack.NewMemory()
	ss := mem.Sessions()
	ss.Steering, ss.CheckInput = agents.Steering, agents.CheckInput
	runner := &turn.Runner{Sessions: ss, Agents: agents, Waker: ss.Waker}
	return &rig{mem: mem, ss: ss, worker: &worker.Worker{Sessions: ss, Runner: runner}}
}

var operator = reducer.Actor{Kind: reducer.ActorOperator, ID: "tester"}

// post posts text to session id, creating it first for agent when it is
// new, and runs its turn until it ends or waits for an operator.
func (r *rig) post(t testing.TB, id, agent, text string) reducer.State {
	t.Helper()
	ctx := t.Context()
	if _, err := r.ss.Load(ctx, id); errors.Is(err, session.ErrNotFound) {
		if _, err := r.ss.Create(ctx, id, "tester", agent); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.ss.Post(ctx, id, operator, text); err != nil {
		t.Fatal(err)
	}
	return r.run(t, id)
}

// run hands session id wakes until its turn ends or waits for an operator
// (an answer, a raise of its cap).
func (r *rig) run(t testing.TB, id string) reducer.State {
	t.Helper()
	for range 50 {
		if _, err := r.worker.Handle(t.Context(), wake.Wake{Session: id, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		st := teststack.Load(t, r.ss, id)
		if st.Turn == nil || len(st.Turn.Pending) > 0 || (st.Turn.Cause == reducer.CauseLimit && !st.Turn.Raised) {
			return st
		}
		if st.Turn.Cause == reducer.CauseTimer {
			r.mem.Clock.Pass(st.Turn.Wake) // as if the time came
		}
	}
	t.Fatalf("session %s still runs after 50 invocations", id)
	return reducer.State{}
}

func (r *rig) answer(t testing.TB, id string, a reducer.Answer) {
	t.Helper()
	st := teststack.Load(t, r.ss, id)
	a.ApprovalID = st.Turn.Pending[0].ID
	if err := r.ss.Answer(t.Context(), id, operator, a); err != nil {
		t.Fatal(err)
	}
	r.run(t, id)
}

// export is GET /sessions/{id}/export of session id.
func (r *rig) export(t testing.TB, id string) api.Export {
	t.Helper()
	ctx := t.Context()
	out := api.Export{Session: id, Facts: teststack.Facts(t, r.ss, id)}
	infos, err := r.ss.Streams(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		ps, st, err := teststack.Parts(ctx, r.ss, id, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		out.Streams = append(out.Streams, api.ExportedTurn{Turn: in.ID, Closed: string(st), Parts: ps})
	}
	// As it travels: JSON and back.
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var back api.Export
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// byText plays the script whose key the turn's last user text holds.
type byText map[string]baton.Model

func (m byText) Stream(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
	// The last user message with text names the script.
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := req.Messages[i]
		if msg.Role != "user" {
			continue
		}
		for _, c := range msg.Content {
			if c.Type != "text" {
				continue
			}
			for k, model := range m {
				if strings.Contains(c.Text, k) {
					return model.Stream(ctx, req)
				}
			}
		}
	}
	return func(yield func(baton.Event, error) bool) {
		yield(baton.Event{}, &baton.ModelError{Kind: baton.ModelInvalidRequest, Err: errors.New("no script")})
	}
}

func script(t testing.TB, s string) baton.Model {
	t.Helper()
	m, err := baton.Script([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type mail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// mailAgents is an agent "mail" whose send tool asks for every call, each
// turn's script chosen by its message: "approve", "deny", "edit" and
// "respond" send one mail; "three" looks the address up three times.
func mailAgents(t testing.TB, sent *atomic.Int64, lim baton.Limits) turn.AgentMap {
	t.Helper()
	one := `{"steps":[{"text":"Sending.","toolCalls":[{"name":"send","input":{"to":"a@example.com","subject":"hi"}}]},{"text":"Sent, or not."}]}`
	models := byText{"approve": script(t, one), "deny": script(t, one), "edit": script(t, one), "respond": script(t, one),
		"three": script(t, `{"steps":[
		 {"toolCalls":[{"name":"lookup","input":{"name":"a"}}]},
		 {"toolCalls":[{"name":"lookup","input":{"name":"b"}}]},
		 {"toolCalls":[{"name":"lookup","input":{"name":"c"}}]},
		 {"text":"Found three."}]}`),
		"fails": script(t, `{"steps":[{"toolCalls":[{"name":"lookup","input":{"name":"a"}}]}]}`)}
	send := baton.Func("send", "Send a mail.", func(ctx context.Context, in mail) (string, error) {
		sent.Add(1)
		return "sent to " + in.To, nil
	}, baton.External(), baton.NeedsApproval())
	lookup := baton.Func("lookup", "Look an address up.", func(ctx context.Context, in struct {
		Name string `json:"name"`
	}) (string, error) {
		return in.Name + "@example.com", nil
	}, baton.Read())
	agents, err := replay.Agents(t.Context(), host.Config{Agents: []baton.Agent{{Name: "mail", Model: models, Tools: []baton.Tool{send, lookup}, Limits: lim}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	return agents
}

// TestReplayGivesRecordedAnswersAgain: turns whose calls were approved,
// denied, edited and answered by hand replay against their own agent
// with no divergence, each replayed call getting the recorded answer
// (the denial's reason, the edit's input, the hand-written result), and
// the tool never runs in the replay.
func TestReplayGivesRecordedAnswersAgain(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	agents := mailAgents(t, &sent, baton.Limits{})
	r := newRig(t, agents)
	const id = "s_answers"
	for _, a := range []reducer.Answer{
		{Decision: reducer.Approve},
		{Decision: reducer.Deny, Reason: "not today"},
		{Decision: reducer.Edit, Input: json.RawMessage(`{"to":"b@example.com","subject":"hi"}`)},
		{Decision: reducer.Respond, Output: json.RawMessage(`"sent by hand"`)},
	} {
		if st := r.post(t, id, "mail", string(a.Decision)+" it"); st.Turn == nil || len(st.Turn.Pending) != 1 {
			t.Fatalf("%s: state %+v; want one approval pending", a.Decision, st)
		}
		r.answer(t, id, a)
	}
	if sent.Load() != 2 {
		t.Fatalf("the recording sent %d mails; want 2 (approved, edited)", sent.Load())
	}
	exp := r.export(t, id)
	rep, err := replay.Run(t.Context(), exp, mailAgents(t, &sent, baton.Limits{}), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || len(rep.Turns) != 4 {
		t.Fatalf("report:\n%s", rep)
	}
	for _, tr := range rep.Turns {
		if tr.Recorded != "completed" || tr.Replayed != "completed" || tr.ReplayedSteps != 2 {
			t.Errorf("turn %+v; want completed in 2 steps both times", tr)
		}
	}
	if sent.Load() != 2 {
		t.Errorf("the replay sent %d mails; want none", sent.Load()-2)
	}
}

// TestReplayOpenTurn: a session exported while its call waits for an
// approval replays up to that wait: the replayed turn waits too, with no
// divergence; the agent now running the call without asking is one.
func TestReplayOpenTurn(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	r := newRig(t, mailAgents(t, &sent, baton.Limits{}))
	r.post(t, "s_open", "mail", "approve it")
	exp := r.export(t, "s_open")
	rep, err := replay.Run(t.Context(), exp, mailAgents(t, &sent, baton.Limits{}), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || len(rep.Turns) != 1 || rep.Turns[0].Recorded != "open" || rep.Turns[0].Replayed != "open" {
		t.Fatalf("report:\n%s", rep)
	}
}

// TestReplayAcrossInvocations: a turn the recording ran in several
// invocations (one step each) replays whole, with no divergence; read
// tools run again (RunReads) answer as recorded.
func TestReplayAcrossInvocations(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	lim := baton.Limits{MaxStepsPerInvocation: 1}
	r := newRig(t, mailAgents(t, &sent, lim))
	r.post(t, "s_steps", "mail", "three")
	exp := r.export(t, "s_steps")
	if n := teststack.Count(exp.Facts, reducer.TurnResumed); n < 3 {
		t.Fatalf("the recording resumed %d times; want one step an invocation", n)
	}
	rep, err := replay.Run(t.Context(), exp, mailAgents(t, &sent, lim), replay.Options{RunReads: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || rep.Turns[0].ReplayedSteps != 4 {
		t.Fatalf("report:\n%s", rep)
	}
	// Against an agent that may take two steps, the replay says so.
	rep, err = replay.Run(t.Context(), exp, mailAgents(t, &sent, baton.Limits{MaxStepsPerTurn: 2}), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Kinds(); !slices.Equal(got, []report.Kind{report.StepsChanged, report.OutcomeChanged}) {
		t.Fatalf("kinds %v; want steps and outcome changed:\n%s", got, rep)
	}
}

// TestReplayFailedTurn: a turn whose model failed after its recorded
// steps fails there in the replay too, with no divergence.
func TestReplayFailedTurn(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	r := newRig(t, mailAgents(t, &sent, baton.Limits{}))
	r.post(t, "s_fails", "mail", "fails")
	exp := r.export(t, "s_fails")
	rep, err := replay.Run(t.Context(), exp, mailAgents(t, &sent, baton.Limits{}), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || rep.Turns[0].Recorded != "failed" || rep.Turns[0].Replayed != "failed" {
		t.Fatalf("report:\n%s", rep)
	}
}

// TestReplayRefusesWhatItCannotReplay: an export with no session.created
// fact, or a turn without its stream, is ErrBadExport; a session whose
// agent is gone reports agent-gone.
func TestReplayRefusesWhatItCannotReplay(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	agents := mailAgents(t, &sent, baton.Limits{})
	r := newRig(t, agents)
	r.post(t, "s_bad", "mail", "three")
	exp := r.export(t, "s_bad")
	if _, err := replay.Run(t.Context(), api.Export{Session: "s_x"}, agents, replay.Options{}); !errors.Is(err, replay.ErrBadExport) {
		t.Errorf("an empty export: %v; want ErrBadExport", err)
	}
	noStream := exp
	noStream.Streams = nil
	if _, err := replay.Run(t.Context(), noStream, agents, replay.Options{}); !errors.Is(err, replay.ErrBadExport) {
		t.Errorf("an export without streams: %v; want ErrBadExport", err)
	}
	rep, err := replay.Run(t.Context(), exp, turn.AgentMap{}, replay.Options{})
	if err != nil || !slices.Equal(rep.Kinds(), []report.Kind{report.AgentGone}) {
		t.Errorf("no agent: %v, report:\n%s", err, rep)
	}
}

// TestReplayedModelPlaysTheRecording: the replayed turn's stream holds the
// recorded reasoning, text, tool calls and their inputs, in order.
func TestReplayedModelPlaysTheRecording(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	r := newRig(t, mailAgents(t, &sent, baton.Limits{}))
	r.post(t, "s_play", "mail", "three")
	exp := r.export(t, "s_play")
	var calls []string
	for _, p := range exp.Streams[0].Parts {
		if p.Type == parts.ToolInputAvailable {
			calls = append(calls, fmt.Sprintf("%s%s", p.ToolName, p.Input))
		}
	}
	if want := []string{`lookup{"name":"a"}`, `lookup{"name":"b"}`, `lookup{"name":"c"}`}; !slices.Equal(calls, want) {
		t.Fatalf("recorded calls %v; want %v", calls, want)
	}
	// Its replay, the reads run again, plays the same calls.
	rep, err := replay.Run(t.Context(), exp, mailAgents(t, &sent, baton.Limits{}), replay.Options{RunReads: true})
	if err != nil || rep.Failed() || rep.Turns[0].ReplayedSteps != 4 {
		t.Fatalf("%v, report:\n%s", err, rep)
	}
}

// TestReplayAgainstAnAgentFile: a demo session replays against an agent
// file whose demo agent is the same but on another provider, whose key is
// not set: a replay builds no model and reads no key. The report says the
// agent changed, and nothing diverged.
func TestReplayAgainstAnAgentFile(t *testing.T) {
	t.Parallel()
	demo, err := replay.Agents(t.Context(), host.Config{}, "")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, demo)
	if st := r.post(t, "s_demo", "demo", "Send the team a status update"); st.Turn == nil || len(st.Turn.Pending) != 1 {
		t.Fatalf("the demo turn: %+v; want its email's approval pending", st)
	}
	r.answer(t, "s_demo", reducer.Answer{Decision: reducer.Approve})
	exp := r.export(t, "s_demo")

	file := filepath.Join(t.TempDir(), "agents.json")
	const agents = `{"agents": {"demo": {"provider": "anthropic", "model": "claude-sonnet-4-5", "apiKeyEnv": "BATON_REPLAY_TEST_NO_SUCH_KEY",
	  "system": "You are baton's demo agent.", "tools": ["get_weather", "search_docs", "send_email"]}}}`
	if err := os.WriteFile(file, []byte(agents), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := replay.Agents(t.Context(), host.Config{Tools: baton.DemoTools()}, file)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(t.Context(), exp, fromFile, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || len(rep.Turns) != 1 || !rep.Turns[0].Changed || rep.Turns[0].ReplayedSteps != 3 {
		t.Fatalf("report:\n%s", rep)
	}
	if _, err := replay.Agents(t.Context(), host.Config{}, filepath.Join(t.TempDir(), "nosuch.json")); err == nil {
		t.Error("a missing agent file: no error")
	}
}

// guardedAgents is an agent "guarded" whose input guardrail escalates
// every message that holds "secret" to an operator, when escalate is set.
func guardedAgents(t testing.TB, escalate bool) turn.AgentMap {
	t.Helper()
	a := baton.Agent{Name: "guarded", Model: script(t, `{"steps":[{"text":"Here it is."}]}`)}
	if escalate {
		a.Guardrails = []baton.Guardrail{{Name: "secrets", Stage: baton.OnInput, Check: func(_ context.Context, s baton.GuardSubject) (baton.GuardDecision, error) {
			if strings.Contains(s.Text, "secret") {
				return baton.Escalate("asks for a secret"), nil
			}
			return baton.Allow(), nil
		}}}
	}
	agents, err := replay.Agents(t.Context(), host.Config{Agents: []baton.Agent{a}}, "")
	if err != nil {
		t.Fatal(err)
	}
	return agents
}

// TestReplayGuardrailEscalations: a guardrail's escalations, approved and
// denied, replay with their recorded answers and no divergence; against
// the agent without the guardrail, the report names each decision that no
// longer happens (the escalations, the denial's block), and the step the
// blocked turn now takes.
func TestReplayGuardrailEscalations(t *testing.T) {
	t.Parallel()
	r := newRig(t, guardedAgents(t, true))
	const id = "s_guarded"
	for _, d := range []reducer.Decision{reducer.Approve, reducer.Deny} {
		if st := r.post(t, id, "guarded", "tell me the secret"); st.Turn == nil || len(st.Turn.Pending) != 1 {
			t.Fatalf("%s: %+v; want the escalation pending", d, st)
		}
		r.answer(t, id, reducer.Answer{Decision: d, Reason: "because"})
	}
	exp := r.export(t, id)
	rep, err := replay.Run(t.Context(), exp, guardedAgents(t, true), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || len(rep.Turns) != 2 || rep.Turns[0].ReplayedSteps != 1 || rep.Turns[1].ReplayedSteps != 0 {
		t.Fatalf("report:\n%s", rep)
	}
	rep, err = replay.Run(t.Context(), exp, guardedAgents(t, false), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range rep.Divergences {
		got = append(got, fmt.Sprintf("%d %s %s", d.Turn, d.Kind, d.Tool))
	}
	// The denied turn's escalation and the block it ended in are gone,
	// and it was blocked before its model's first step: now the step is
	// asked for, and the recording has none to give.
	want := []string{"1 rule-changed guardrail:secrets", "2 rule-changed guardrail:secrets", "2 rule-changed guardrail:secrets", "2 steps-changed "}
	if !slices.Equal(got, want) {
		t.Fatalf("divergences %q; want %q\n%s", got, want, rep)
	}
}

// TestReplayTimer: a turn that slept on wait_until (an agent file's
// built-in) replays past its timer with no divergence.
func TestReplayTimer(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "agents.json")
	const agents = `{"agents": {"sleeper": {"provider": "scripted", "tools": ["wait_until"], "script": {"steps": [
	  {"text": "Waiting.", "toolCalls": [{"name": "wait_until", "input": {"until": "2031-01-01T00:00:00Z"}}]},
	  {"text": "Awake."}]}}}}`
	if err := os.WriteFile(file, []byte(agents), 0o600); err != nil {
		t.Fatal(err)
	}
	sleeper, err := replay.Agents(t.Context(), host.Config{}, file)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, sleeper)
	r.post(t, "s_sleep", "sleeper", "sleep")
	exp := r.export(t, "s_sleep")
	if teststack.Count(exp.Facts, reducer.TurnSuspended) == 0 || teststack.Count(exp.Facts, reducer.TurnCompleted) != 1 {
		t.Fatalf("the recording did not sleep and complete: %+v", exp.Facts)
	}
	rep, err := replay.Run(t.Context(), exp, sleeper, replay.Options{})
	if err != nil || rep.Failed() || rep.Turns[0].Replayed != "completed" || rep.Turns[0].ReplayedSteps != 2 {
		t.Fatalf("%v, report:\n%s", err, rep)
	}
}

// TestReplayCancelledTurn: a turn cancelled while its call waited for an
// approval is cancelled at the same place in the replay, and the next turn
// replays after it, with no divergence.
func TestReplayCancelledTurn(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	r := newRig(t, mailAgents(t, &sent, baton.Limits{}))
	const id = "s_cancel"
	r.post(t, id, "mail", "approve it")
	if err := r.ss.Cancel(t.Context(), id, operator, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	r.post(t, id, "mail", "three")
	rep, err := replay.Run(t.Context(), r.export(t, id), mailAgents(t, &sent, baton.Limits{}), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || len(rep.Turns) != 2 || rep.Turns[0].Replayed != "cancelled" || rep.Turns[1].Replayed != "completed" || rep.Turns[1].ReplayedSteps != 4 {
		t.Fatalf("report:\n%s", rep)
	}
}

// TestReplaySpendLimit: a turn suspended at its output-token cap, raised by
// an operator and then completed, replays with the recorded raise; a turn
// at the cap that the recording cancelled is cancelled in the replay too,
// and the turn after it replays, to the cap it was exported waiting at.
func TestReplaySpendLimit(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	lim := baton.Limits{Spend: baton.Spend{Turn: baton.Caps{OutputTokens: 1}}}
	r := newRig(t, mailAgents(t, &sent, lim))
	const id = "s_limit"
	if st := r.post(t, id, "mail", "three"); st.Turn == nil || st.Turn.Cause != reducer.CauseLimit {
		t.Fatalf("state %+v; want the turn at its cap", st)
	}
	if err := r.ss.Raise(t.Context(), id, operator, reducer.Raise{Turn: reducer.Caps{OutputTokens: 1000}}); err != nil {
		t.Fatal(err)
	}
	r.run(t, id)
	r.post(t, id, "mail", "three again")
	if err := r.ss.Cancel(t.Context(), id, operator, "too dear"); err != nil {
		t.Fatal(err)
	}
	r.post(t, id, "mail", "fails")
	exp := r.export(t, id)
	rep, err := replay.Run(t.Context(), exp, mailAgents(t, &sent, lim), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ends []string
	for _, tr := range rep.Turns {
		ends = append(ends, tr.Recorded+"/"+tr.Replayed)
	}
	if rep.Failed() || !slices.Equal(ends, []string{"completed/completed", "cancelled/cancelled", "open/open"}) {
		t.Fatalf("turns %v; want each ending as recorded:\n%s", ends, rep)
	}
}
