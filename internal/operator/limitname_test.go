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

// The view of a turn suspended at a spend cap names the cap; a raise that
// would not let the turn go on (another cap, or the named one not past the
// usage) is a 409 saying which cap to raise, and writes nothing; a raise
// of the named cap resumes the turn.
func TestRaiseOfTheWrongCapIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"Weather."}`})
	m, err := model.ParseScript([]byte(`{"steps":[
 {"text":"one","toolCalls":[{"name":"get_weather","input":{"city":"A"}}]},
 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(tool.Demo()...)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024,
		Limits: turn.Limits{Spend: turn.Spend{Turn: reducer.Caps{Cost: 0.00001}}},
		Price:  &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}}
	runner := &turn.Runner{Sessions: e.store, Agents: turn.AgentMap{agent.Name: agent}}
	out, err := runner.Start(t.Context(), s.ID)
	if err != nil || out.Cause != reducer.CauseLimit {
		t.Fatalf("start: %+v, %v; want suspended for limit", out, err)
	}
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	used := float64(streamUsage(t, e, s.ID, out.Turn).CostMicroUSD) / 1e6
	want := reducer.Limit{Scope: reducer.ScopeTurn, Measure: reducer.MeasureCost, Cap: 0.00001, Usage: used}
	if got.Turn == nil || got.Turn.Limit == nil || *got.Turn.Limit != want {
		t.Fatalf("the view's turn %+v names limit %+v, want %+v", got.Turn, got.Turn.Limit, want)
	}

	path := "/sessions/" + s.ID + "/limits"
	before := len(e.facts(s.ID))
	for _, body := range []string{`{"session":{"cost":5}}`, `{"turn":{"inputTokens":1000000,"outputTokens":1000000}}`,
		`{"turn":{"cost":0.000001}}`} {
		r := e.must(http.StatusConflict, req{method: "POST", path: path, user: alice, body: body})
		if msg := r.errorMessage(t); !strings.Contains(msg, "suspended at its turn.cost cap") || !strings.Contains(msg, "raise turn.cost past $") {
			t.Fatalf("raise %s: message %q does not say which cap to raise", body, msg)
		}
	}
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("refused raises wrote %d facts", n-before)
	}
	e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice, body: `{"turn":{"cost":1}}`})
	w := &worker.Worker{Sessions: e.store, Runner: runner}
	res, err := w.Handle(t.Context(), wake.Wake{Session: s.ID, Reason: wake.Raised})
	if err != nil || res.Runs != 1 || res.Outcomes[0].Kind != turn.Completed {
		t.Fatalf("worker after the raise: %+v, %v", res, err)
	}
}
