package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/tool/remote"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/test/harness"
)

// outsideCI is an outside system for the deployed tests: baton's HTTP
// tool posts it a build with a callback; after delay it posts the
// build's result to the callback URL, through the front door, with no
// other credential.
type outsideCI struct {
	delay time.Duration
	srv   *httptest.Server
	mu    sync.Mutex
	got   []remote.Callback
	posts []time.Time // when each completion was posted
	codes []int       // what the door answered each
	done  chan struct{}
}

func newOutsideCI(t testing.TB, delay time.Duration) *outsideCI {
	c := &outsideCI{delay: delay, done: make(chan struct{}, 16)}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env remote.Envelope
		if err := json.NewDecoder(r.Body).Decode(&env); err != nil || env.Callback == nil {
			http.Error(w, "want an envelope with a callback", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.got = append(c.got, *env.Callback)
		c.mu.Unlock()
		go c.complete(*env.Callback)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *outsideCI) complete(cb remote.Callback) {
	time.Sleep(c.delay)
	at := time.Now()
	res, err := http.Post(cb.URL, "application/json", strings.NewReader(`{"output":{"build":7,"status":"passed"}}`))
	code := 0
	if err == nil {
		code = res.StatusCode
		res.Body.Close()
	}
	c.mu.Lock()
	c.posts, c.codes = append(c.posts, at), append(c.codes, code)
	c.mu.Unlock()
	c.done <- struct{}{}
}

// callbackAgents writes an agent file whose agent ci calls start_build, an
// HTTP tool on url that completes by callback, then answers.
func callbackAgents(t testing.TB, url string) string {
	t.Helper()
	dir := t.TempDir()
	script := `{"steps":[
	 {"delay":"20ms","text":"Starting the build.","toolCalls":[{"name":"start_build","input":{"ref":"main"}}]},
	 {"delay":"20ms","text":"The build passed."}]}`
	agents := fmt.Sprintf(`{"agents":{"ci":{"provider":"scripted","script":"ci.script.json","system":"You start builds.",
	 "tools":[{"name":"start_build","kind":"http","description":"Start a CI build; its result comes when it ends.",
	   "schema":{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]},
	   "effect":"external","url":%q,"timeout":"5s","callback":{"timeout":"1m"}}],
	 "limits":{"budget":"1500ms","margin":"300ms","leaseGrace":"200ms","maxStepsPerInvocation":20,"maxStepsPerTurn":100}}}}`, url)
	for name, body := range map[string]string{"agents.json": agents, "ci.script.json": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "agents.json")
}

// TestDeployedCallback: through the real bootstraps behind the modelled
// front door, an agent-file tool hands its callback to an outside server,
// which completes it 2 s later through the callback route with no JWT; the
// turn resumes and completes, and the model's answer follows the build's
// result. The same token again, a forged one and garbage are refused by
// the door, each writing nothing.
func TestDeployedCallback(t *testing.T) {
	t.Parallel()
	kumo(t)
	ci := newOutsideCI(t, 2*time.Second)
	d := harness.StartDeployed(t, frontLimits(), harness.WithAgents(callbackAgents(t, ci.srv.URL)))
	var s struct{ ID string }
	if r := call(t, d, "POST", "/sessions", d.Token(alice), `{"agent":"ci"}`, nil); r.code != http.StatusCreated || json.Unmarshal(r.body, &s) != nil {
		t.Fatalf("create: %v", r)
	}
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/messages", d.Token(alice), `{"text":"build main"}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("post: %v", r)
	}
	select {
	case <-ci.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the outside server never completed a call")
	}
	waitIdle(t, d, s.ID)
	facts, err := d.Store.Facts(t.Context(), s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	types := make([]reducer.Type, len(facts))
	var suspended, resumed time.Time
	for i, f := range facts {
		types[i] = f.Type
		switch {
		case f.Type == reducer.TurnSuspended && f.Cause == reducer.CauseCallback:
			suspended = f.Time
		case f.Type == reducer.TurnResumed && !suspended.IsZero() && resumed.IsZero():
			resumed = f.Time
		}
	}
	if suspended.IsZero() || resumed.IsZero() || types[len(types)-1] != reducer.TurnCompleted {
		t.Fatalf("facts %v: want a suspension for the callback, a resume, and a completed turn", types)
	}
	if n := countType(types, reducer.CallbackOpened); n != 1 {
		t.Fatalf("%d callbacks opened, want 1", n)
	}
	ci.mu.Lock()
	posted, code, cb := ci.posts[0], ci.codes[0], ci.got[0]
	ci.mu.Unlock()
	if code != http.StatusOK {
		t.Fatalf("the completion was answered %d, want 200", code)
	}
	if !strings.HasPrefix(cb.URL, d.URL+"/callbacks/") {
		t.Fatalf("callback URL %q is not under the front door %s", cb.URL, d.URL)
	}
	t.Logf("completion POST to resume: %v", resumed.Sub(posted))
	var stream bytes.Buffer
	if r := call(t, d, "GET", "/sessions/"+s.ID+"/turns/"+facts[len(facts)-1].Turn+"/stream", d.Token(alice), "", nil); r.code == http.StatusOK {
		stream.Write(r.body)
	}
	if !strings.Contains(stream.String(), `\"build\":7`) && !strings.Contains(stream.String(), `"build":7`) {
		t.Fatalf("the turn's stream has no build result: %.400s", stream.String())
	}
	// Refusals, through the door, without a JWT: nothing written.
	forged := cb.Token[:len(cb.Token)-5] + "AAAAA"
	for _, c := range []struct {
		token string
		want  int
	}{{cb.Token, http.StatusGone}, {forged, http.StatusGone}, {"garbage", http.StatusNotFound}} {
		if r := call(t, d, "POST", "/callbacks/"+c.token, "", `{"output":"again"}`, nil); r.code != c.want {
			t.Errorf("completion with %.12s…: %d %s, want %d", c.token, r.code, r.body, c.want)
		}
	}
	after, _ := d.Store.Facts(t.Context(), s.ID, 0)
	if len(after) != len(facts) {
		t.Fatalf("refused completions wrote %d facts", len(after)-len(facts))
	}
	// The functions' logs never hold the token.
	if out := d.Output(); strings.Contains(out, cb.Token[len(cb.Token)-43:]) {
		t.Fatal("a function's log holds the callback token")
	}
}

func countType(ts []reducer.Type, want reducer.Type) int {
	return len(slices.DeleteFunc(slices.Clone(ts), func(t reducer.Type) bool { return t != want }))
}

// BenchmarkDeployedCallbackResume is the time from an outside system's
// completion POST (through the front door, to the real operator
// bootstrap) to the turn's resume (its turn.resumed fact, by the real
// resume bootstrap, woken through SQS by the modelled event source
// mapping): one session per iteration, reported as p50 and p99 in ms.
func BenchmarkDeployedCallbackResume(b *testing.B) {
	kumo(b)
	// The completion comes after the suspension is durable, as a real
	// outside system's does.
	ci := newOutsideCI(b, 300*time.Millisecond)
	d := harness.StartDeployed(b, frontLimits(), harness.WithAgents(callbackAgents(b, ci.srv.URL)))
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		var s struct{ ID string }
		if r := call(b, d, "POST", "/sessions", d.Token(alice), `{"agent":"ci"}`, nil); r.code != http.StatusCreated || json.Unmarshal(r.body, &s) != nil {
			b.Fatalf("create: %v", r)
		}
		if r := call(b, d, "POST", "/sessions/"+s.ID+"/messages", d.Token(alice), `{"text":"build main"}`, nil); r.code != http.StatusAccepted {
			b.Fatalf("post: %v", r)
		}
		<-ci.done
		resumed := waitResumedAfterCallback(b, d, s.ID)
		ci.mu.Lock()
		posted := ci.posts[i]
		ci.mu.Unlock()
		lat = append(lat, resumed.Sub(posted))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}

// waitResumedAfterCallback waits for the session's turn to end and returns
// the time of its resume after the suspension for its callback.
func waitResumedAfterCallback(tb testing.TB, d *harness.Deployed, id string) time.Time {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		facts, err := d.Store.Facts(tb.Context(), id, 0)
		if err == nil && len(facts) > 0 && facts[len(facts)-1].Ends() {
			seen := false
			for _, f := range facts {
				if f.Type == reducer.TurnSuspended && f.Cause == reducer.CauseCallback {
					seen = true
				}
				if seen && f.Type == reducer.TurnResumed {
					return f.Time
				}
			}
			tb.Fatalf("session %s ended without a resume after a callback suspension", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("session %s did not end", id)
	return time.Time{}
}
