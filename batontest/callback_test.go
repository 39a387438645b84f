package batontest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/pkg/reducer"
)

type buildIn struct {
	Ref string `json:"ref"`
}

// ci is an outside system in the test: a tool that completes by callback
// hands it the token over HTTP; what it does then is the test's (done).
type ci struct {
	mu     sync.Mutex
	tokens []string
	srv    *httptest.Server
}

func newCI(t *testing.T, done func(token string)) *ci {
	c := &ci{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Token string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Token == "" {
			http.Error(w, "no token", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.tokens = append(c.tokens, body.Token)
		c.mu.Unlock()
		if done != nil {
			done(body.Token)
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *ci) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.tokens...)
}

// tool is start_build, which hands its callback's token to the CI server.
func (c *ci) tool(p baton.CallbackPolicy) baton.Tool {
	return baton.Func("start_build", "Start a CI build; its result comes when it ends.", func(ctx context.Context, in buildIn) (any, error) {
		cb, err := baton.CallbackOf(ctx)
		if err != nil {
			return nil, err
		}
		body, _ := json.Marshal(map[string]string{"token": cb.Token, "ref": in.Ref})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.srv.URL, strings.NewReader(string(body)))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		res.Body.Close()
		return nil, baton.ErrResultPending
	}, baton.CompletesByCallback(p))
}

// buildDesk is a kit whose model starts a build of main, then ends.
func buildDesk(t *testing.T, c *ci, p baton.CallbackPolicy) (*batontest.Kit, *batontest.Session, *batontest.Recorder) {
	t.Helper()
	rec := batontest.Record(batontest.Script(t, `{"steps":[
	 {"text":"Building.","toolCalls":[{"name":"start_build","input":{"ref":"main"}}]},
	 {"text":"Built."}]}`))
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "ci", Model: rec, Tools: []baton.Tool{c.tool(p)}}}})
	s := kit.Session("ci")
	s.Post("Build main.")
	return kit, s, rec
}

func countFacts(fs []batontest.Fact, typ reducer.Type) int {
	n := 0
	for _, f := range fs {
		if f.Type == typ {
			n++
		}
	}
	return n
}

// TestCallbackCompletedLater: the tool hands its token to an outside
// server and returns pending; the turn suspends with no invocation
// running; the server completes the call later, and the model sees its
// output as the call's result. The token is used once.
func TestCallbackCompletedLater(t *testing.T) {
	t.Parallel()
	c := newCI(t, nil)
	kit, s, rec := buildDesk(t, c, baton.CallbackPolicy{Timeout: time.Hour})
	out := s.Run()
	if out.Kind != batontest.Suspended || out.Cause != reducer.CauseCallback {
		t.Fatalf("first run %+v, want suspended for its callback", out)
	}
	if got := c.got(); len(got) != 1 {
		t.Fatalf("the CI server got %d tokens, want 1", len(got))
	}
	if w := s.Waiting(); !strings.Contains(w, "1 callback") {
		t.Fatalf("Waiting = %q", w)
	}
	if again := s.Run(); again.Kind != "" {
		t.Fatalf("a run before the completion %+v, want nothing run", again)
	}
	token := c.got()[0]
	if err := kit.Complete(token, map[string]any{"status": "passed", "build": 42}); err != nil {
		t.Fatal(err)
	}
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("run after the completion %+v, want completed", out)
	}
	_, result := lastToolBlocks(t, rec)
	if !strings.Contains(string(result.Output), `"build":42`) || result.IsError {
		t.Fatalf("the model's result %s (error %v), want the completion's output", result.Output, result.IsError)
	}
	fs := s.Facts()
	if countFacts(fs, reducer.CallbackOpened) != 1 || countFacts(fs, reducer.CallbackEnded) != 1 {
		t.Fatalf("facts: %d opened, %d ended; want 1 of each", countFacts(fs, reducer.CallbackOpened), countFacts(fs, reducer.CallbackEnded))
	}
	for _, f := range fs {
		if b, _ := json.Marshal(f); strings.Contains(string(b), token) {
			t.Fatalf("fact %d (%s) holds the token", f.Seq, f.Type)
		}
	}
	// The turn ended: the token answers nothing more, and writes nothing.
	if err := kit.Complete(token, "again"); !errors.Is(err, batontest.ErrCallbackExpired) {
		t.Fatalf("a completion after the turn ended: %v, want ErrCallbackExpired", err)
	}
	if n := len(s.Facts()); n != len(fs) {
		t.Fatalf("a refused completion wrote %d facts", n-len(fs))
	}
}

// TestCallbackCompletedWhileToolRuns: the outside system completes the
// call before the tool returned pending, so before the suspension is
// durable; the completion is not lost, and the turn resumes at once.
func TestCallbackCompletedWhileToolRuns(t *testing.T) {
	t.Parallel()
	var kit *batontest.Kit
	var first error
	c := newCI(t, func(token string) {
		first = kit.Complete(token, "passed")
		if err := kit.Complete(token, "passed twice"); !errors.Is(err, batontest.ErrCallbackDone) {
			t.Errorf("a second completion: %v, want ErrCallbackDone", err)
		}
	})
	k, s, rec := buildDesk(t, c, baton.CallbackPolicy{})
	kit = k
	out := s.Run()
	if first != nil {
		t.Fatal(first)
	}
	if out.Kind != batontest.Suspended {
		t.Fatalf("run %+v, want suspended", out)
	}
	if n := s.State().Next(kit.Now(), 0); n.Action != reducer.Resume {
		t.Fatalf("after the suspension the session needs %v (%s), want a resume at once", n.Action, n.Reason)
	}
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("second run %+v, want completed", out)
	}
	if _, result := lastToolBlocks(t, rec); string(result.Output) != `"passed"` {
		t.Fatalf("the model's result %s, want the first completion's", result.Output)
	}
}

// TestCallbackRefusals: a forged token, a malformed one, a failure that
// the model sees, and a second completion; each refusal writes nothing.
func TestCallbackRefusals(t *testing.T) {
	t.Parallel()
	c := newCI(t, nil)
	kit, s, rec := buildDesk(t, c, baton.CallbackPolicy{})
	if out := s.Run(); out.Cause != reducer.CauseCallback {
		t.Fatalf("first run %+v", out)
	}
	token := c.got()[0]
	before := len(s.Facts())
	forged := token[:len(token)-4] + "AAAA"
	parts := strings.Split(token, ".")
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte("s_other"))
	other := strings.Join(parts, ".") // the secret, presented for another session
	for _, bad := range []string{forged, "nonsense", "", other} {
		if err := kit.Complete(bad, "x"); !errors.Is(err, batontest.ErrCallbackUnknown) {
			t.Errorf("Complete(%.20q…) = %v, want ErrCallbackUnknown", bad, err)
		}
	}
	if err := kit.Heartbeat(forged); !errors.Is(err, batontest.ErrCallbackUnknown) {
		t.Errorf("a forged heartbeat: %v", err)
	}
	if n := len(s.Facts()); n != before {
		t.Fatalf("refusals wrote %d facts", n-before)
	}
	if err := kit.Fail(token, "the build broke: 3 tests failed"); err != nil {
		t.Fatal(err)
	}
	if err := kit.Complete(token, "passed"); !errors.Is(err, batontest.ErrCallbackDone) {
		t.Fatalf("a completion after the failure: %v, want ErrCallbackDone", err)
	}
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("run %+v", out)
	}
	if _, result := lastToolBlocks(t, rec); !result.IsError || !strings.Contains(string(result.Output), "3 tests failed") {
		t.Fatalf("the model's result %s (error %v), want the failure", result.Output, result.IsError)
	}
}

// TestCallbackTimeout: past its timeout, the tick's wake resumes the turn
// and the model gets a timeout error; a completion after it is refused.
func TestCallbackTimeout(t *testing.T) {
	t.Parallel()
	c := newCI(t, nil)
	kit, s, rec := buildDesk(t, c, baton.CallbackPolicy{Timeout: 10 * time.Minute})
	if out := s.Run(); out.Cause != reducer.CauseCallback {
		t.Fatalf("first run %+v", out)
	}
	kit.Skip(9 * time.Minute)
	kit.Tick()
	if out := s.Run(); out.Kind != "" {
		t.Fatalf("a run before the timeout %+v, want nothing run", out)
	}
	kit.Skip(2 * time.Minute)
	kit.Tick()
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("run after the timeout %+v, want completed", out)
	}
	if _, result := lastToolBlocks(t, rec); !result.IsError || !strings.Contains(string(result.Output), "within 10m0s") {
		t.Fatalf("the model's result %s (error %v), want the timeout", result.Output, result.IsError)
	}
	if err := kit.Complete(c.got()[0], "late"); !errors.Is(err, batontest.ErrCallbackExpired) {
		t.Fatalf("a late completion: %v, want ErrCallbackExpired", err)
	}
}

// TestCallbackHeartbeat: heartbeats keep a call alive past its heartbeat
// timeout; when they stop, it times out after one.
func TestCallbackHeartbeat(t *testing.T) {
	t.Parallel()
	c := newCI(t, nil)
	kit, s, rec := buildDesk(t, c, baton.CallbackPolicy{Timeout: time.Hour, Heartbeat: 5 * time.Minute})
	if out := s.Run(); out.Cause != reducer.CauseCallback {
		t.Fatalf("first run %+v", out)
	}
	token := c.got()[0]
	for range 3 { // 12 minutes, past two heartbeat timeouts
		kit.Skip(4 * time.Minute)
		if err := kit.Heartbeat(token); err != nil {
			t.Fatal(err)
		}
		kit.Tick()
		if out := s.Run(); out.Kind != "" {
			t.Fatalf("a run while heartbeats come %+v, want nothing run", out)
		}
	}
	kit.Skip(6 * time.Minute)
	if err := kit.Heartbeat(token); !errors.Is(err, batontest.ErrCallbackExpired) {
		t.Fatalf("a heartbeat past the heartbeat timeout: %v, want ErrCallbackExpired", err)
	}
	kit.Tick()
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("run after the heartbeats stopped %+v", out)
	}
	if _, result := lastToolBlocks(t, rec); !result.IsError || !strings.Contains(string(result.Output), "no heartbeat within 5m0s") {
		t.Fatalf("the model's result %s, want the heartbeat timeout", result.Output)
	}
}

// TestCallbackAfterCancel: cancelling the turn expires its token.
func TestCallbackAfterCancel(t *testing.T) {
	t.Parallel()
	c := newCI(t, nil)
	kit, s, _ := buildDesk(t, c, baton.CallbackPolicy{})
	if out := s.Run(); out.Cause != reducer.CauseCallback {
		t.Fatalf("first run %+v", out)
	}
	s.Cancel("no longer needed")
	before := len(s.Facts())
	if err := kit.Complete(c.got()[0], "passed"); !errors.Is(err, batontest.ErrCallbackExpired) {
		t.Fatalf("a completion after cancel: %v, want ErrCallbackExpired", err)
	}
	if n := len(s.Facts()); n != before {
		t.Fatalf("the refused completion wrote %d facts", n-before)
	}
}

// TestCallbackAfterDelete: a session deleted (its waiting turn cancelled
// first) leaves its tokens unknown: a completion is refused as unknown.
func TestCallbackAfterDelete(t *testing.T) {
	t.Parallel()
	c := newCI(t, nil)
	kit, s, _ := buildDesk(t, c, baton.CallbackPolicy{})
	if out := s.Run(); out.Cause != reducer.CauseCallback {
		t.Fatalf("first run %+v", out)
	}
	if err := s.Delete(); err == nil {
		t.Fatal("a session whose turn waits was deleted")
	}
	s.Cancel("closing the account")
	if err := s.Delete(); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := kit.Complete(c.got()[0], "passed"); !errors.Is(err, batontest.ErrCallbackUnknown) {
		t.Fatalf("a completion after delete: %v, want ErrCallbackUnknown", err)
	}
	if err := kit.Heartbeat(c.got()[0]); !errors.Is(err, batontest.ErrCallbackUnknown) {
		t.Fatalf("a heartbeat after delete: %v, want ErrCallbackUnknown", err)
	}
}
