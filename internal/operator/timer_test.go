package operator_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// A turn that calls wait_until three days ahead shows as suspended on a
// timer; bad bodies are 400s and another caller a 404, writing nothing; a
// wake with no time ends the wait now, and the turn runs to the end; with
// no timer left, the route is a 409.
func TestWakeEndsATimer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"Wait."}`})
	until := time.Now().UTC().Add(72 * time.Hour).Truncate(time.Second)
	m, err := model.ParseScript(fmt.Appendf(nil, `{"steps":[
 {"text":"waiting","toolCalls":[{"name":"wait_until","input":{"until":%q}}]},
 {"text":"done"}]}`, until.Format(time.RFC3339)))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(append(tool.Demo(), tool.WaitUntil())...)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024}
	runner := &turn.Runner{Sessions: e.store, Agents: turn.AgentMap{agent.Name: agent}}
	out, err := runner.Start(t.Context(), s.ID)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseTimer {
		t.Fatalf("start: %+v, %v; want suspended on a timer", out, err)
	}
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Status != reducer.Suspended || got.Turn == nil || got.Turn.Cause != reducer.CauseTimer || !got.Turn.Wake.Equal(until) {
		t.Fatalf("session view = %+v, want suspended on a timer until %v", got, until)
	}

	path := "/sessions/" + s.ID + "/wake"
	before := len(e.facts(s.ID))
	for _, body := range []string{`{"at":"tomorrow"}`, `{"at":5}`, `[1]`} {
		if msg := e.must(http.StatusBadRequest, req{method: "POST", path: path, user: alice, body: body}).errorMessage(t); msg == "" {
			t.Fatalf("wake %s: no error message", body)
		}
	}
	e.must(http.StatusNotFound, req{method: "POST", path: path, user: ids.New("mallory"), body: `{}`})
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("refused wakes wrote %d facts", n-before)
	}

	e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice, body: `{}`})
	w := &worker.Worker{Sessions: e.store, Runner: runner}
	if res, err := w.Handle(t.Context(), wake.Wake{Session: s.ID, Reason: wake.Timer}); err != nil || res.Runs != 1 {
		t.Fatalf("worker after the wake: %+v, %v", res, err)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Status != reducer.Idle {
		t.Fatalf("after the ended wait: %+v, want idle", got)
	}
	e.must(http.StatusConflict, req{method: "POST", path: path, user: alice, body: `{}`})
}

// A schedule is set with PUT, shows in the session view with its next
// occurrence, is refused with a 400 for a bad cron or no text (writing
// nothing), and cleared with DELETE; clearing none is a 409.
func TestScheduleRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	path := "/sessions/" + s.ID + "/schedule"
	before := len(e.facts(s.ID))
	for _, body := range []string{`{"cron":"every day","text":"x"}`, `{"cron":"0 9 * * *","text":""}`, `{"cron":"0 9 * * *"}`, `[1]`} {
		if msg := e.must(http.StatusBadRequest, req{method: "PUT", path: path, user: alice, body: body}).errorMessage(t); msg == "" {
			t.Fatalf("schedule %s: no error message", body)
		}
	}
	e.must(http.StatusNotFound, req{method: "PUT", path: path, user: ids.New("mallory"), body: `{"cron":"0 9 * * *","text":"x"}`})
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("refused schedules wrote %d facts", n-before)
	}
	e.must(http.StatusAccepted, req{method: "PUT", path: path, user: alice, body: `{"cron":"0 9 * * *","text":"Good morning."}`})
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Schedule == nil || got.Schedule.Cron != "0 9 * * *" || got.Schedule.Next.Hour() != 9 || got.Schedule.Next.Minute() != 0 {
		t.Fatalf("session view schedule = %+v", got.Schedule)
	}
	e.must(http.StatusAccepted, req{method: "DELETE", path: path, user: alice})
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Schedule != nil {
		t.Fatalf("schedule after DELETE = %+v", got.Schedule)
	}
	e.must(http.StatusConflict, req{method: "DELETE", path: path, user: alice})
}
