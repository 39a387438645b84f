package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/test/harness"
)

// pinnedAgents writes the agent file of one build of the agent "pinned"
// (onChange pin): its system prompt and its one tool's name are the
// build's, the tool an HTTP read on url that needs approval.
func pinnedAgents(t *testing.T, system, toolName, url string) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf(`{"steps":[
	 {"delay":"20ms","text":"Looking it up.","toolCalls":[{"name":%q,"input":{"city":"Paris"}}]},
	 {"delay":"20ms","text":"Done."}]}`, toolName)
	agents := fmt.Sprintf(`{"agents":{"pinned":{"provider":"scripted","script":"pinned.script.json","system":%q,"onChange":"pin",
	 "tools":[{"name":%q,"kind":"http","description":"Look a city up.",
	   "schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},
	   "effect":"read","url":%q,"timeout":"5s","approval":"always"}],
	 "limits":{"budget":"1500ms","margin":"300ms","leaseGrace":"200ms","maxStepsPerInvocation":20,"maxStepsPerTurn":100,"approvalTTL":"30m"}}}}`,
		system, toolName, url)
	for name, body := range map[string]string{"agents.json": agents, "pinned.script.json": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "agents.json")
}

// TestDeployedPinnedTurn: through the real resume bootstrap, two builds of
// an agent whose onChange is pin, as two published versions of the
// resume function (AWS_LAMBDA_FUNCTION_VERSION 1 and 2, each its own
// agent file: build 2 has a new prompt and the tool renamed). Two turns
// start on build 1 and wait for approvals; the deploy points the wakes at
// build 2. The first turn, approved, is taken by build 2's consumer,
// handed to version 1 by an asynchronous Lambda invocation, and finishes
// there: its turn.resumed records build 1 and its definition, and its
// call runs once, on the tool as approved. Then version 1 is deleted: the
// second turn, approved, fails naming the missing build, and its call
// never runs.
func TestDeployedPinnedTurn(t *testing.T) {
	t.Parallel()
	e := kumo(t)
	var calls atomic.Int32
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"population":2100000}`))
	}))
	t.Cleanup(tool.Close)
	versions := harness.NewVersions(t, e.URL)
	d := harness.StartDeployed(t, frontLimits(), harness.WithAgents(pinnedAgents(t, "You look cities up.", "lookup", tool.URL)),
		harness.WithEnv(map[string]string{"AWS_LAMBDA_FUNCTION_VERSION": "1", "AWS_ENDPOINT_URL": versions.URL}))
	versions.Publish("1", d.Resume)

	// Two turns start on build 1 and wait for their approvals.
	var ids, approvals []string
	for range 2 {
		var s struct{ ID string }
		if r := call(t, d, "POST", "/sessions", d.Token(alice), `{"agent":"pinned"}`, nil); r.code != http.StatusCreated || json.Unmarshal(r.body, &s) != nil {
			t.Fatalf("create: %v", r)
		}
		if r := call(t, d, "POST", "/sessions/"+s.ID+"/messages", d.Token(alice), `{"text":"How many people live in Paris?"}`, nil); r.code != http.StatusAccepted {
			t.Fatalf("post: %v", r)
		}
		ids = append(ids, s.ID)
		approvals = append(approvals, waitPending(t, d, s.ID))
	}
	started := turnVersion(t, d, ids[0], reducer.TurnStarted)
	if started.Build != "1" || started.OnChange != reducer.OnChangePin {
		t.Fatalf("turn.started records %+v, want build 1 under pin", started)
	}

	// The deploy: version 2, its own agent file, takes the wakes.
	v2 := d.StartResume(t, map[string]string{"AWS_LAMBDA_FUNCTION_VERSION": "2",
		"BATON_AGENTS": pinnedAgents(t, "You look cities up. Answer in French.", "city_lookup", tool.URL)})
	versions.Publish("2", v2)
	d.Consume(v2)
	before := d.Resume.Invocations.Load()

	// The first turn: approved, handed to build 1, finished there.
	if r := call(t, d, "POST", "/sessions/"+ids[0]+"/approvals/"+approvals[0], d.Token(alice), `{"decision":"approve"}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("approve: %v", r)
	}
	waitIdle(t, d, ids[0])
	sess, err := d.Store.Load(t.Context(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if sess.State.Last != reducer.TurnCompleted {
		t.Fatalf("the pinned turn ended with %s (%+v), want completed", sess.State.Last, sess.State.LastFailure)
	}
	resumed := turnVersion(t, d, ids[0], reducer.TurnResumed)
	if resumed.Build != "1" || resumed.Fingerprint != started.Fingerprint {
		t.Fatalf("turn.resumed records %+v, want build 1 and the definition the turn started on (%s)", resumed, started.Fingerprint)
	}
	// The hand-off's cost: from the answer to the pinned build's resume
	// (the wake's delivery, build 2's look, the Invoke, build 1's start),
	// against the same span of the turn resumed where it landed (below).
	handed := answeredToResumed(t, d, ids[0])
	if got := versions.Invoked(); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("qualified invocations %v, want one of version 1", got)
	}
	if n := v2.Invocations.Load(); n < 1 {
		t.Fatal("build 2 never took the wake")
	}
	if n := d.Resume.Invocations.Load() - before; n != 1 {
		t.Fatalf("build 1 was invoked %d times after the deploy, want once (the hand-off)", n)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once, on build 1", n)
	}

	// Version 1 is deleted: the second turn fails, naming it.
	versions.Delete("1")
	if r := call(t, d, "POST", "/sessions/"+ids[1]+"/approvals/"+approvals[1], d.Token(alice), `{"decision":"approve"}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("approve: %v", r)
	}
	waitIdle(t, d, ids[1])
	if sess, err = d.Store.Load(t.Context(), ids[1]); err != nil {
		t.Fatal(err)
	}
	t.Logf("answer to turn.resumed: %v handed to build 1; %v for the resume that found build 1 gone", handed, answeredToResumed(t, d, ids[1]))
	f := sess.State.LastFailure
	if sess.State.Last != reducer.TurnFailed || f == nil || f.Kind != reducer.FailChanged || !strings.Contains(f.Error, "pinned to build 1, which is gone") {
		t.Fatalf("the turn whose build is gone ended with %s (%+v), want failed naming build 1", sess.State.Last, f)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times in all, want once: the second call never runs", n)
	}
	var show struct {
		LastFailure *reducer.Failure `json:"lastFailure"`
	}
	if r := call(t, d, "GET", "/sessions/"+ids[1], d.Token(alice), "", nil); r.code != http.StatusOK || json.Unmarshal(r.body, &show) != nil ||
		show.LastFailure == nil || !strings.Contains(show.LastFailure.Error, "build 1") {
		t.Fatalf("GET /sessions/{id}: %v, want the failure naming build 1", r)
	}
}

// waitPending waits for the session's turn to ask for an approval, and
// returns its id.
func waitPending(t *testing.T, d *harness.Deployed, id string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		sess, err := d.Store.Load(t.Context(), id)
		if err == nil && sess.State.Turn != nil && len(sess.State.Turn.Pending) > 0 {
			return sess.State.Turn.Pending[0].ID
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("session %s never asked for an approval", id)
	return ""
}

// turnVersion is the version the session's newest fact of type typ
// records.
func turnVersion(t *testing.T, d *harness.Deployed, id string, typ reducer.Type) reducer.Version {
	t.Helper()
	fs, err := d.Store.Facts(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].Type == typ && fs[i].Version != nil {
			return *fs[i].Version
		}
	}
	t.Fatalf("session %s has no %s with a version", id, typ)
	return reducer.Version{}
}

// answeredToResumed is the time from the session's last approval.answered
// to the turn.resumed after it.
func answeredToResumed(t *testing.T, d *harness.Deployed, id string) time.Duration {
	t.Helper()
	fs, err := d.Store.Facts(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var answered time.Time
	for _, f := range fs {
		switch {
		case f.Type == reducer.ApprovalAnswered:
			answered = f.Time
		case f.Type == reducer.TurnResumed && !answered.IsZero():
			return f.Time.Sub(answered)
		}
	}
	t.Fatalf("session %s has no turn.resumed after an answer", id)
	return 0
}
