package operator_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// shared is the emulator with the table and bucket every test uses. kumo's
// state is process-wide, so tests use fresh ids and fresh callers.
var shared testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &shared)) }

const userHeader = "X-Test-User"

// env is one operator API server, with a wake queue of its own so a test
// sees exactly the wakes it caused: on storage in memory (mem), or on the
// emulator's shared table and bucket (newEmuEnv).
type env struct {
	t      testing.TB
	store  *session.Store
	srv    *httptest.Server
	queue  string            // on the emulator
	mem    *teststack.Memory // in memory
	client *http.Client
}

// newEnv starts a server on storage in memory; tweak adjusts the config
// before New.
func newEnv(t testing.TB, tweak func(*operator.Config)) *env {
	t.Helper()
	return newEnvWrapped(t, tweak, nil)
}

// newEmuEnv is newEnv on the emulator, for a test that reads the table or
// the bucket past the session store, or injects faults into its requests.
func newEmuEnv(t testing.TB, tweak func(*operator.Config)) *env {
	t.Helper()
	return newEmuEnvWrapped(t, tweak, nil)
}

// newEmuEnvWrapped is newEmuEnv with middleware wrap around the API.
func newEmuEnvWrapped(t testing.TB, tweak func(*operator.Config), wrap func(http.Handler) http.Handler) *env {
	t.Helper()
	c := shared.Clients()
	own := shared
	own.QueueURL = testenv.New(t).QueueURL
	e := serve(t, teststack.Sessions(c, own), tweak, wrap)
	e.queue = own.QueueURL
	return e
}

// newEnvWrapped is newEnv with middleware wrap around the API.
func newEnvWrapped(t testing.TB, tweak func(*operator.Config), wrap func(http.Handler) http.Handler) *env {
	t.Helper()
	mem := memoryOf(t)
	e := serve(t, mem.Sessions(), tweak, wrap)
	e.mem = mem
	return e
}

// wait lets d pass: on the test's clock in memory, on the wall clock on
// the emulator.
func (e *env) wait(d time.Duration) {
	if e.mem != nil {
		e.mem.Clock.Advance(d)
		return
	}
	time.Sleep(d)
}

// memories holds each test's storage in memory, by the name of its
// top-level test: the servers of one test (and of its subtests) share it,
// as servers share a table, until the test that made it ends.
var memories sync.Map

func memoryOf(t testing.TB) *teststack.Memory {
	name, _, _ := strings.Cut(t.Name(), "/")
	m, loaded := memories.LoadOrStore(name, teststack.NewMemory())
	if !loaded {
		t.Cleanup(func() { memories.Delete(name) })
	}
	return m.(*teststack.Memory)
}

// serve starts the API on store.
func serve(t testing.TB, store *session.Store, tweak func(*operator.Config), wrap func(http.Handler) http.Handler) *env {
	t.Helper()
	cfg := operator.Config{
		Sessions: store,
		Agents:   func(name string) bool { return name == "demo" },
		Identity: func(r *http.Request) (string, bool) {
			u := r.Header.Get(userHeader)
			return u, u != ""
		},
		Log: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	h := operator.New(cfg)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, store: store, srv: srv, client: srv.Client()}
}

// response is an answer as the tests look at it.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into v, failing the test if it is not JSON.
func (r response) json(t testing.TB, v any) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json; body %s", ct, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
}

// errorMessage returns the JSON error message of a refusal.
func (r response) errorMessage(t testing.TB) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	r.json(t, &e)
	if e.Error == "" {
		t.Fatalf("refusal without an error message: %s", r.body)
	}
	return e.Error
}

// req describes a request; user "" sends no identity.
type req struct {
	method, path, user string
	body               string
	contentType        string // defaults to application/json when body is set
	header             map[string]string
}

func (e *env) do(r req) response {
	e.t.Helper()
	var body io.Reader = http.NoBody
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequestWithContext(e.t.Context(), r.method, e.srv.URL+r.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.user != "" {
		hr.Header.Set(userHeader, r.user)
	}
	switch {
	case r.contentType == "-":
	case r.contentType != "":
		hr.Header.Set("Content-Type", r.contentType)
	case r.body != "":
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := e.client.Do(hr)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// must sends r and fails the test unless the status is want.
func (e *env) must(want int, r req) response {
	e.t.Helper()
	resp := e.do(r)
	if resp.status != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", r.method, r.path, resp.status, want, resp.body)
	}
	return resp
}

// create makes a session of user through the API.
func (e *env) create(user string) api.Session {
	e.t.Helper()
	var s api.Session
	e.must(http.StatusCreated, req{method: "POST", path: "/sessions", user: user, body: `{"agent":"demo"}`}).json(e.t, &s)
	return s
}

// facts reads all of a session's facts from the store.
func (e *env) facts(id string) []reducer.Fact {
	e.t.Helper()
	fs, err := e.store.Facts(e.t.Context(), id, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return fs
}

func (e *env) state(id string) reducer.State {
	e.t.Helper()
	sess, err := e.store.Load(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return sess.State
}

// append commits facts through session.Store.Append, as the runner would.
func (e *env) append(id string, facts ...reducer.Fact) reducer.State {
	e.t.Helper()
	st, err := e.store.Append(e.t.Context(), id, e.state(id), facts...)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// startTurn records a message and a running turn for it.
func (e *env) startTurn(id string) (turn, stream string) {
	e.t.Helper()
	turn = ids.New("turn")
	stream = turn // a turn's stream has the turn's id
	e.append(id,
		reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "seed"},
			Message: &reducer.Message{ID: ids.New("msg"), Text: "deploy it"}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: turn},
			Turn: turn, Stream: stream, Lease: time.Now().Add(10 * time.Minute)},
	)
	return turn, stream
}

// suspendForApproval makes the running turn ask for approval and suspend.
func (e *env) suspendForApproval(id, turn string) reducer.Approval {
	e.t.Helper()
	ap := reducer.Approval{ID: ids.New("ap"), ToolCallID: ids.New("call"), Tool: "deploy",
		Input: json.RawMessage(`{"env":"prod"}`), Expires: time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)}
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	e.append(id,
		reducer.Fact{Type: reducer.ApprovalRequested, Actor: agent, Turn: turn, Approval: &ap},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseApproval},
	)
	return ap
}

// suspendUncertain records an execution and suspends the turn on it.
func (e *env) suspendUncertain(id, turn string) reducer.Execution {
	e.t.Helper()
	ex := reducer.Execution{ID: ids.New("ex"), ToolCallID: ids.New("call"), Tool: "charge"}
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	e.append(id,
		reducer.Fact{Type: reducer.ExecutionStarted, Actor: agent, Turn: turn, Execution: &ex},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseUncertain, Execution: &ex},
	)
	return ex
}

// wakes receives what is on the env's queue, and deletes it: in memory,
// the wakes due; on the emulator, waiting up to a second for the first.
func (e *env) wakes() []wake.Wake {
	e.t.Helper()
	if e.mem != nil {
		var out []wake.Wake
		for _, w := range e.mem.Wakes.TakeDue() {
			out = append(out, w.Wake)
		}
		return out
	}
	return teststack.Receive(e.t, shared.Clients().SQS, e.queue, 1)
}

// event is one Server-Sent Event.
type event struct {
	id, name, data string
}

// parseEvents splits an event-stream body into events.
func parseEvents(t *testing.T, body []byte) []event {
	t.Helper()
	var out []event
	var cur event
	has := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if has {
				out = append(out, cur)
			}
			cur, has = event{}, false
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			cur.id = value
		case "event":
			cur.name = value
		case "data":
			if cur.data != "" {
				cur.data += "\n"
			}
			cur.data += value
		case "":
			continue // a comment
		default:
			t.Fatalf("unexpected event field %q in %q", field, body)
		}
		has = true
	}
	if has {
		t.Fatalf("event stream ends inside an event: %q", body)
	}
	return out
}

// dynamoOn is a fact store on another table of the emulator.
func dynamoOn(table string) *dynamo.Store { return dynamo.New(shared.Clients().DynamoDB, table) }
