package operator_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/baton-run/baton/pkg/ids"
	"github.com/baton-run/baton/pkg/model"
	"github.com/baton-run/baton/pkg/operator"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/tool"
	"github.com/baton-run/baton/pkg/turn"
)

// streamUsage sums the usage in the message-metadata of a turn's stream.
func streamUsage(t *testing.T, e *env, id, stream string) reducer.Usage {
	t.Helper()
	page, err := e.store.Streams.Read(t.Context(), id, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	var u reducer.Usage
	for _, en := range page.Entries {
		if en.Part.Type != streams.MessageMetadata {
			continue
		}
		var m struct {
			Usage reducer.Usage `json:"usage"`
		}
		if err := json.Unmarshal(en.Part.MessageMetadata, &m); err != nil {
			t.Fatal(err)
		}
		if m.Usage.Steps != 1 {
			t.Fatalf("a step's message-metadata says steps %d, want 1: %s", m.Usage.Steps, en.Part.MessageMetadata)
		}
		u = u.Add(m.Usage)
	}
	return u
}

// A session's usage counts its open turn's steps as its last suspension
// recorded them, and counts each step once when the turn ends.
func TestSessionUsageIncludesTheOpenTurn(t *testing.T) {
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"Weather, five times."}`})
	m, err := model.ParseScript([]byte(`{"steps":[
 {"text":"one","toolCalls":[{"name":"get_weather","input":{"city":"A"}}]},
 {"text":"two two","toolCalls":[{"name":"get_weather","input":{"city":"B"}}]},
 {"text":"three three three","toolCalls":[{"name":"get_weather","input":{"city":"C"}}]},
 {"text":"four","toolCalls":[{"name":"get_weather","input":{"city":"D"}}]},
 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(tool.Demo()...)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024,
		Limits: turn.Limits{MaxStepsPerInvocation: 2}}
	runner := &turn.Runner{Sessions: e.store, Agents: turn.AgentMap{agent.Name: agent}}
	out, err := runner.Start(t.Context(), s.ID)
	if err != nil || out.Kind != turn.Suspended || out.Steps != 2 {
		t.Fatalf("start: %+v, %v", out, err)
	}
	var got operator.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	want := streamUsage(t, e, s.ID, out.Turn)
	if want.Steps != 2 || want.InputTokens == 0 || want.OutputTokens == 0 {
		t.Fatalf("stream usage after two steps = %+v", want)
	}
	if got.Usage != want {
		t.Fatalf("session usage mid-turn = %+v, want the stream's %+v", got.Usage, want)
	}
	for out.Kind == turn.Suspended {
		if out, err = runner.Resume(t.Context(), s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if out.Kind != turn.Completed {
		t.Fatalf("resume: %+v", out)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	want = streamUsage(t, e, s.ID, out.Turn)
	if want.Steps != 5 || got.Usage != want || out.Usage != want {
		t.Fatalf("usage after the turn: session %+v, outcome %+v, want the stream's %+v", got.Usage, out.Usage, want)
	}
}
