package operator_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// A turn past its token cap suspends for the limit; the session view shows
// it with usage and cost equal to the step metadata's sum; bad raises are
// 400s that write nothing; a raise resumes the turn to completion; a raise
// with no turn at a limit is a 409.
func TestRaiseLimitsResumesTheTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"Weather, twice."}`})
	m, err := model.ParseScript([]byte(`{"steps":[
 {"text":"one","toolCalls":[{"name":"get_weather","input":{"city":"A"}}]},
 {"text":"two two","toolCalls":[{"name":"get_weather","input":{"city":"B"}}]},
 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(tool.Demo()...)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024,
		Limits: turn.Limits{Spend: turn.Spend{Turn: reducer.Caps{InputTokens: 1}}},
		Price:  &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}}
	runner := &turn.Runner{Sessions: e.store, Agents: turn.AgentMap{agent.Name: agent}}
	out, err := runner.Start(t.Context(), s.ID)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseLimit || out.Steps != 1 {
		t.Fatalf("start: %+v, %v; want suspended for limit after 1 step", out, err)
	}

	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	want := streamUsage(t, e, s.ID, out.Turn)
	if got.Status != reducer.Suspended || got.Turn == nil || got.Turn.Cause != reducer.CauseLimit {
		t.Fatalf("session view = %+v, want suspended for limit", got)
	}
	if got.Usage != want || want.CostMicroUSD <= 0 || got.Turn.Usage != want {
		t.Fatalf("session usage %+v, turn usage %+v, want the step metadata's %+v with a cost", got.Usage, got.Turn.Usage, want)
	}

	// A wake before the raise runs nothing: only an operator moves the turn.
	w := &worker.Worker{Sessions: e.store, Runner: runner}
	if res, err := w.Handle(t.Context(), wake.Wake{Session: s.ID, Reason: wake.Rewake}); err != nil || res.Runs != 0 {
		t.Fatalf("worker before the raise: %+v, %v", res, err)
	}

	path := "/sessions/" + s.ID + "/limits"
	before := len(e.facts(s.ID))
	for _, body := range []string{`{}`, `{"turn":{"inputTokens":-1}}`, `{"session":{"cost":-1}}`, `{"turn":{"tokens":5}}`, `{"turn":{"inputTokens":"many"}}`, `[1]`} {
		r := e.must(http.StatusBadRequest, req{method: "POST", path: path, user: alice, body: body})
		if msg := r.errorMessage(t); msg == "" {
			t.Fatalf("raise %s: no error message", body)
		}
	}
	if r := e.must(http.StatusBadRequest, req{method: "POST", path: path, user: alice, body: `{"turn":{"inputTokens":-1}}`}); !strings.Contains(r.errorMessage(t), "turn.inputTokens") {
		t.Fatalf("message %q does not name the field", r.errorMessage(t))
	}
	// Another caller cannot raise this session's caps.
	e.must(http.StatusNotFound, req{method: "POST", path: path, user: ids.New("mallory"), body: `{"turn":{"inputTokens":1000000}}`})
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("refused raises wrote %d facts", n-before)
	}

	raise := req{method: "POST", path: path, user: alice, body: `{"turn":{"inputTokens":1000000},"session":{"cost":5}}`,
		header: map[string]string{"Idempotency-Key": ids.New("raise")}}
	e.must(http.StatusAccepted, raise)
	fs := e.facts(s.ID)
	// A retry under the same key gets the same answer and writes nothing.
	if r := e.must(http.StatusAccepted, raise); r.header.Get("Idempotent-Replayed") != "true" || len(e.facts(s.ID)) != len(fs) {
		t.Fatalf("replayed raise: header %q, %d facts, want %d", r.header.Get("Idempotent-Replayed"), len(e.facts(s.ID)), len(fs))
	}
	raised := fs[len(fs)-1]
	if raised.Type != reducer.LimitsRaised || raised.Actor.Kind != reducer.ActorOperator || raised.Actor.ID != alice {
		t.Fatalf("last fact = %+v, want limits.raised by alice", raised)
	}
	var raisedWake *wake.Wake
	for _, w := range e.wakes() {
		if w.Session == s.ID && w.Reason == wake.Raised {
			raisedWake = &w
		}
	}
	if raisedWake == nil {
		t.Fatal("the raise sent no wake")
	}
	// The worker that takes the wake resumes the turn.
	res, err := w.Handle(t.Context(), *raisedWake)
	if err != nil || res.Runs != 1 || res.Outcomes[0].Kind != turn.Completed {
		t.Fatalf("worker after raise: %+v, %v", res, err)
	}
	out = res.Outcomes[0]
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	want = streamUsage(t, e, s.ID, out.Turn)
	if want.Steps != 3 || got.Usage != want || out.Usage != want || got.Caps.Cost != 5 {
		t.Fatalf("after the turn: session usage %+v caps %+v, outcome %+v, want the stream's %+v", got.Usage, got.Caps, out.Usage, want)
	}

	before = len(e.facts(s.ID))
	e.must(http.StatusConflict, req{method: "POST", path: path, user: alice, body: `{"turn":{"inputTokens":5}}`})
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("a raise with no turn at a limit wrote %d facts", n-before)
	}
}
