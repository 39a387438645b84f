package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batonlib "github.com/baton-run/baton"
	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/cli"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/tool/remote"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/reducer"
)

// callbackAgents are the callback stack's agents: ci calls start_build,
// an HTTP tool that completes by callback (an hour, heartbeats within 10
// minutes), then answers; pair calls it twice in one step, so that its
// turn waits on after one callback ended; brief's callback times out
// after a second.
const callbackAgents = `{"agents": {
  "ci": {
    "provider": "scripted",
    "script": {"steps": [
      {"text": "Starting the build.", "toolCalls": [{"name": "start_build", "input": {"ref": "main"}}]},
      {"text": "The build is done."}
    ]},
    "tools": [{"name": "start_build", "kind": "http", "description": "Start a CI build; its result comes when it ends.",
      "schema": {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]},
      "effect": "external", "url": "TOOL_URL", "timeout": "5s", "callback": {"timeout": "1h", "heartbeat": "10m"}}]
  },
  "pair": {
    "provider": "scripted",
    "script": {"steps": [
      {"text": "Starting two builds.", "toolCalls": [{"name": "start_build", "input": {"ref": "main"}}, {"name": "start_build", "input": {"ref": "dev"}}]},
      {"text": "Both builds are done."}
    ]},
    "tools": [{"name": "start_build", "kind": "http", "description": "Start a CI build; its result comes when it ends.",
      "schema": {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]},
      "effect": "external", "url": "TOOL_URL", "timeout": "5s", "callback": {"timeout": "1h", "heartbeat": "10m"}}]
  },
  "brief": {
    "provider": "scripted",
    "script": {"steps": [
      {"text": "Starting the build.", "toolCalls": [{"name": "start_build", "input": {"ref": "main"}}]},
      {"text": "The build timed out."}
    ]},
    "tools": [{"name": "start_build", "kind": "http", "description": "Start a CI build.",
      "schema": {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]},
      "effect": "external", "url": "TOOL_URL", "timeout": "5s", "callback": {"timeout": "1s"}}]
  }
}}`

// callbackStack is a stack of its own on the process's emulator (fresh
// table, bucket and queue; the dev server's demo agent has no tool that
// completes by callback): the operator API as the dev server serves it,
// the resume poller, and the outside system start_build hands its
// callback to, which keeps each token for the test.
type callbackStack struct {
	env      vars // BATON_API is the stack's
	store    *session.Store
	requests atomic.Int64 // requests the API served
	mu       sync.Mutex
	tokens   map[string]chan string // by session
}

func newCallbackStack(t *testing.T, ctx context.Context) *callbackStack {
	t.Helper()
	s := &callbackStack{tokens: map[string]chan string{}}
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env remote.Envelope
		if err := json.NewDecoder(r.Body).Decode(&env); err != nil || env.Callback == nil {
			http.Error(w, "want an envelope with a callback", http.StatusBadRequest)
			return
		}
		tok, err := callback.Parse(env.Callback.Token)
		if err != nil {
			http.Error(w, "not a token", http.StatusBadRequest)
			return
		}
		s.tokenOf(tok.Session) <- env.Callback.Token
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(outside.Close)

	res, err := testenv.Provision(ctx, testenv.Emulator(), batonlib.Template())
	if err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(agents, []byte(strings.ReplaceAll(callbackAgents, "TOOL_URL", outside.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	a, err := app.New(ctx, app.Resources{Table: res.Table, Bucket: res.Bucket, QueueURL: res.QueueURL, AgentFile: agents}, res.Clients(), log)
	if err != nil {
		t.Fatal(err)
	}
	s.store = a.Sessions
	identity := func(r *http.Request) (string, bool) {
		if id := r.Header.Get("X-Baton-Operator"); id != "" {
			return id, true
		}
		return "local", true
	}
	h := a.Operator(identity, 0, "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.env = vars{"BATON_API": srv.URL}

	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = worker.Poll(pctx, a.Clients.SQS, res.QueueURL, a.Worker().HandleSQS, log)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func (s *callbackStack) tokenOf(session string) chan string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens[session] == nil {
		s.tokens[session] = make(chan string, 4)
	}
	return s.tokens[session]
}

// waiting starts a session of agent whose turn hands start_build's
// callback out, and returns the session and the token once the turn is
// suspended for it.
func (s *callbackStack) waiting(t *testing.T, ctx context.Context, agent string) (id, token string) {
	t.Helper()
	id, tokens := s.waitingN(t, ctx, agent, 1)
	return id, tokens[0]
}

// waitingN is waiting for a turn that hands n callbacks out, in the order
// the tool got them.
func (s *callbackStack) waitingN(t *testing.T, ctx context.Context, agent string, n int) (id string, tokens []string) {
	t.Helper()
	id = strings.TrimSpace(must(t, ctx, s.env, "new", agent))
	must(t, ctx, s.env, "send", id, "Build main")
	for range n {
		select {
		case token := <-s.tokenOf(id):
			tokens = append(tokens, token)
		case <-ctx.Done():
			t.Fatalf("session %s: the tool got %d callback(s), want %d", id, len(tokens), n)
		}
	}
	for {
		sess, err := s.store.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st := sess.State; st.Status == reducer.Suspended && st.Turn.Cause == reducer.CauseCallback {
			return id, tokens
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s never suspended for its callback", id)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// idle follows the session until it is idle and returns its stream parts
// as tail --json printed them.
func (s *callbackStack) idle(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	return must(t, ctx, s.env, "tail", id, "--until-idle", "--json")
}

// facts returns the session's facts.
func (s *callbackStack) facts(t *testing.T, ctx context.Context, id string) []reducer.Fact {
	t.Helper()
	fs, err := s.store.Facts(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func ended(fs []reducer.Fact) []reducer.Fact {
	var out []reducer.Fact
	for _, f := range fs {
		if f.Type == reducer.CallbackEnded {
			out = append(out, f)
		}
	}
	return out
}

// TestCompleteByToken: heartbeat prints the callback's new deadline;
// complete with JSON from stdin records the call's result once: while
// the turn waits on for its other call, a second completion and a
// heartbeat exit 4 (409) and write nothing; a token of no callback exits
// 3, and JSON that is not JSON exits 2 before any request. Once the
// other call is completed the model gets both results; a token of the
// ended turn exits 4 too (410). The token is never printed.
func TestCompleteByToken(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := newCallbackStack(t, ctx)
	id, tokens := s.waitingN(t, ctx, "pair", 2)
	token, other := tokens[0], tokens[1]

	before := time.Now()
	out := must(t, ctx, s.env, "heartbeat", token)
	deadline, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(out))
	if err != nil || deadline.Before(before.Add(10*time.Minute-time.Minute)) || deadline.After(time.Now().Add(10*time.Minute+time.Minute)) {
		t.Fatalf("heartbeat printed %q (%v), want a deadline 10 minutes out", out, err)
	}

	n := s.requests.Load()
	expect(t, ctx, s.env, cli.ExitUsage, "JSON is not JSON", "complete", token, `{"build":`)
	expect(t, ctx, s.env, cli.ExitUsage, "want TOKEN JSON", "complete", token)
	if got := s.requests.Load(); got != n {
		t.Fatalf("refused command lines sent %d request(s)", got-n)
	}

	var stdout, stderr bytes.Buffer
	if code := cli.Run(ctx, []string{"complete", token, "-"}, strings.NewReader(`{"build":7,"status":"passed"}`), &stdout, &stderr, s.env.get); code != 0 ||
		stdout.String() != "completed the call of the callback\n" {
		t.Fatalf("complete from stdin: exit %d, out %q, stderr %q", code, stdout.String(), stderr.String())
	}
	fs := s.facts(t, ctx, id)
	if e := ended(fs); len(e) != 1 || e[0].Callback.Status != callback.Completed || e[0].Actor.Kind != reducer.ActorCallback {
		t.Fatalf("callback.ended facts: %+v, want one completion by the token's holder", e)
	}
	expect(t, ctx, s.env, cli.ExitConflict, "already ended", "complete", token, `{"build":8}`)
	expect(t, ctx, s.env, cli.ExitConflict, "already ended", "complete", token, "--error", "too late")
	expect(t, ctx, s.env, cli.ExitConflict, "already ended", "heartbeat", token)
	forged, _ := callback.Mint(id, fs[len(fs)-1].Turn)
	expect(t, ctx, s.env, cli.ExitNotFound, "no such callback", "complete", forged, `{"build":9}`)
	expect(t, ctx, s.env, cli.ExitNotFound, "no such callback", "heartbeat", "bcb1.not-a-token")
	if got := len(s.facts(t, ctx, id)); got != len(fs) {
		t.Fatalf("refused completions wrote %d fact(s)", got-len(fs))
	}
	for _, args := range [][]string{{"complete", token, `{"build":8}`}, {"heartbeat", token}} {
		if r := baton(ctx, s.env, args...); r.code == 0 || strings.Contains(r.stderr+r.out, token) {
			t.Fatalf("baton %s: exit %d, printed %q", args[0], r.code, r.stderr)
		}
	}

	must(t, ctx, s.env, "complete", other, `{"build":8,"status":"passed"}`)
	parts := s.idle(t, ctx, id)
	for _, want := range []string{`"output":{"build":7,"status":"passed"}`, `"output":{"build":8,"status":"passed"}`, "Both builds are done."} {
		if !strings.Contains(parts, want) {
			t.Fatalf("the turn's stream lacks %s:\n%s", want, parts)
		}
	}
	if e := ended(s.facts(t, ctx, id)); len(e) != 2 {
		t.Fatalf("%d callback.ended facts, want 2", len(e))
	}
	expect(t, ctx, s.env, cli.ExitConflict, "expired", "complete", other, `{"build":9}`)
}

// TestCompleteByTokenWithError: --error fails the call: the model gets the
// text as the call's error, and the turn goes on.
func TestCompleteByTokenWithError(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := newCallbackStack(t, ctx)
	id, token := s.waiting(t, ctx, "ci")
	expect(t, ctx, s.env, cli.ExitUsage, "--error is empty", "complete", token, "--error", "")
	if out := must(t, ctx, s.env, "complete", token, "--error", "the build farm is down"); out != "failed the call of the callback\n" {
		t.Fatalf("complete --error printed %q", out)
	}
	parts := s.idle(t, ctx, id)
	if !strings.Contains(parts, `"type":"tool-output-error"`) || !strings.Contains(parts, `"errorText":"the build farm is down"`) ||
		!strings.Contains(parts, "The build is done.") {
		t.Fatalf("the model did not get the error, or the turn did not go on:\n%s", parts)
	}
	if e := ended(s.facts(t, ctx, id)); len(e) != 1 || e[0].Callback.Status != callback.Failed {
		t.Fatalf("callback.ended facts: %+v, want one failure", e)
	}
}

// TestCompleteByHand: show lists the calls waiting for their callback
// and the commands that complete them; the session's owner completes one
// by its call id, without the token, once: while the turn waits on for
// the other, a second completion, by hand or by the token, exits 4;
// another operator's attempt, or an unknown call, exits 3; nothing more
// is written. Once the turn ended the call is not found, its token
// expired. A callback past its deadline exits 4.
func TestCompleteByHand(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := newCallbackStack(t, ctx)
	id, tokens := s.waitingN(t, ctx, "pair", 2)
	sess, err := s.store.Load(ctx, id)
	if err != nil || len(sess.State.Turn.Callbacks) != 2 {
		t.Fatalf("the turn's callbacks: %+v %v", sess.State.Turn, err)
	}
	calls := map[string]string{} // token → call
	for _, c := range sess.State.Turn.Callbacks {
		for _, tok := range tokens {
			if callback.Hash(tok) == c.Hash {
				calls[tok] = c.ToolCallID
			}
		}
	}
	call, other := calls[tokens[0]], tokens[1]
	show := must(t, ctx, s.env, "show", id)
	for _, c := range sess.State.Turn.Callbacks {
		for _, want := range []string{"callback " + c.ToolCallID + " of start_build waits, deadline ", "baton complete " + id + " " + c.ToolCallID + " JSON"} {
			if !strings.Contains(show, want) {
				t.Fatalf("show lacks %q:\n%s", want, show)
			}
		}
	}
	var shown api.Session
	if err := json.Unmarshal([]byte(must(t, ctx, s.env, "show", id, "-o", "json")), &shown); err != nil || len(shown.Callbacks) != 2 {
		t.Fatalf("show -o json: callbacks %+v (%v)", shown.Callbacks, err)
	}
	for _, tok := range tokens {
		if strings.Contains(show, tok) {
			t.Fatalf("show prints a token:\n%s", show)
		}
	}

	bob := vars{"BATON_API": s.env["BATON_API"], "BATON_OPERATOR": "bob"}
	expect(t, ctx, bob, cli.ExitNotFound, "session not found", "complete", id, call, `{"build":7}`)
	expect(t, ctx, s.env, cli.ExitNotFound, "waits for no callback", "complete", id, "call_nope", `{"build":7}`)
	expect(t, ctx, s.env, cli.ExitUsage, "--reason goes with a completion by hand", "complete", tokens[0], `{"build":7}`, "--reason", "r")
	if out := must(t, ctx, s.env, "complete", id, call, `{"build":7,"by":"hand"}`, "--reason", "ran it myself"); out != "completed tool call "+call+" of session "+id+" by hand\n" {
		t.Fatalf("complete by hand printed %q", out)
	}
	fs := s.facts(t, ctx, id)
	if e := ended(fs); len(e) != 1 || e[0].Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: "local"}) || e[0].Reason != "ran it myself" {
		t.Fatalf("callback.ended facts: %+v, want one by operator local with the reason", e)
	}
	expect(t, ctx, s.env, cli.ExitConflict, "already ended", "complete", id, call, `{"build":8}`)
	expect(t, ctx, s.env, cli.ExitConflict, "already ended", "complete", id, call, "--error", "again")
	expect(t, ctx, s.env, cli.ExitConflict, "already ended", "complete", tokens[0], `{"build":8}`)
	if got := len(s.facts(t, ctx, id)); got != len(fs) {
		t.Fatalf("refused completions wrote %d fact(s)", got-len(fs))
	}

	must(t, ctx, s.env, "complete", other, "--error", "the build farm is down")
	parts := s.idle(t, ctx, id)
	for _, want := range []string{`"output":{"build":7,"by":"hand"}`, `"errorText":"the build farm is down"`} {
		if !strings.Contains(parts, want) {
			t.Fatalf("the turn's stream lacks %s:\n%s", want, parts)
		}
	}
	n := len(s.facts(t, ctx, id))
	expect(t, ctx, s.env, cli.ExitNotFound, "waits for no callback", "complete", id, call, `{"build":8}`)
	expect(t, ctx, s.env, cli.ExitConflict, "expired", "complete", tokens[0], `{"build":8}`)
	if got := len(s.facts(t, ctx, id)); got != n {
		t.Fatalf("completions of an ended turn wrote %d fact(s)", got-n)
	}

	// brief's callback times out after a second.
	id3, token3 := s.waiting(t, ctx, "brief")
	sess, _ = s.store.Load(ctx, id3)
	call3 := sess.State.Turn.Callbacks[0].ToolCallID
	time.Sleep(1100 * time.Millisecond)
	r := baton(ctx, s.env, "complete", token3, `{"build":1}`)
	if r.code != cli.ExitConflict || !strings.Contains(r.stderr, "expired") {
		t.Fatalf("a completion past the deadline: exit %d, stderr %q; want 4, expired", r.code, r.stderr)
	}
	if r := baton(ctx, s.env, "complete", id3, call3, `{"build":1}`); r.code != cli.ExitConflict && r.code != cli.ExitNotFound {
		t.Fatalf("a completion by hand past the deadline: exit %d, stderr %q", r.code, r.stderr)
	}
	if e := ended(s.facts(t, ctx, id3)); len(e) > 1 || (len(e) == 1 && e[0].Callback.Status != callback.TimedOut) {
		t.Fatalf("callback.ended facts past the deadline: %+v", e)
	}
}
