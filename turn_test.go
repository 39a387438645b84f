package baton_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/providers"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// stack wires baton as a program would, with app.NewWith, on the test
// binary's emulator (kumo, or the endpoint in AWS_ENDPOINT_URL), with fresh
// resources and the Go agents.
func stack(t *testing.T, agents ...*turn.Agent) *app.App {
	t.Helper()
	ctx := context.Background()
	e, err := testenv.Provision(ctx, testenv.Emulator(), baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.NewWith(ctx, app.Resources{Table: e.Table, Bucket: e.Bucket, QueueURL: e.QueueURL}, e.Clients(),
		slog.New(slog.NewTextHandler(io.Discard, nil)), app.WithAgents(app.Config{}, agents...))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// recorder is a Model that records every request it gets, as JSON, and
// plays a scripted model, but first fails the next fail requests as an
// unavailable provider would.
type recorder struct {
	next baton.Model
	mu   sync.Mutex
	reqs [][]byte
	fail int
}

func (r *recorder) Stream(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, b)
	fail := r.fail > 0
	if fail {
		r.fail--
	}
	r.mu.Unlock()
	if fail {
		return func(yield func(baton.Event, error) bool) {
			yield(baton.Event{}, &model.Error{Kind: model.Unavailable, Status: 503, Err: errors.New("overloaded")})
		}
	}
	return r.next.Stream(ctx, req)
}

func (r *recorder) requests() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// offered names the tools a recorded request offered.
func offered(t *testing.T, req []byte) string {
	t.Helper()
	var r baton.Request
	if err := json.Unmarshal(req, &r); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.Tools {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

func toolsOf(t *testing.T, req []byte) string {
	t.Helper()
	var r struct{ Tools json.RawMessage }
	if err := json.Unmarshal(req, &r); err != nil {
		t.Fatal(err)
	}
	return string(r.Tools)
}

// TestTurnCallsMCPToolsAndWaitsForApproval runs a Go agent whose tools are
// a Go Func and the three tools of a real MCP server over HTTP. The model
// calls all of them in one step: the read-only and the idempotent MCP tools
// run, the Go tool's bad input comes back as an error result, and the
// destructive MCP tool waits for an operator; once approved it runs, once.
//
// Before the approval the server changes its list: lookup goes, set_flag's
// schema changes, a tool is added. The resumed invocations offer the list
// recorded when the turn started, and a model step asked twice from the
// same durable state (the first try fails as the provider is down) gets
// byte-identical input. The model's call of the removed lookup gets a
// clear error result.
func TestTurnCallsMCPToolsAndWaitsForApproval(t *testing.T) {
	ctx := context.Background()
	srv := mcptest.Start()
	defer srv.Close()
	t.Setenv("FILES_TOKEN", "Bearer s3cret")

	script, err := baton.Script([]byte(`{"steps":[
	 {"text":"Cleaning up.","toolCalls":[
	  {"name":"lookup","input":{"path":"/srv/old.log"}},
	  {"name":"set_flag","input":{"name":"maintenance","value":true}},
	  {"name":"delete_file","input":{"path":"/srv/old.log"}},
	  {"name":"note","input":{"txt":"typo"}}
	 ]},
	 {"text":"Checking.","toolCalls":[{"name":"lookup","input":{"path":"/srv/old.log"}}]},
	 {"text":"Done."}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := &recorder{next: script}
	noted := 0
	note := baton.Func("note", "Write a note.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		noted++
		return "noted", nil
	}, baton.Read())
	agent, err := app.GoAgent(baton.Agent{
		Name: "files", Model: m, System: "You tidy up servers.",
		Tools: []baton.Tool{note},
		MCP: []baton.MCPServer{{Name: "files", URL: srv.URL,
			HeaderEnv: map[string]string{"Authorization": "FILES_TOKEN"},
			Allow:     []string{mcptest.Lookup, mcptest.SetFlag, mcptest.Delete}}},
		Limits: baton.Limits{ModelRetry: model.RetryPolicy{Attempts: 1}},
	}, providers.MCP())
	if err != nil {
		t.Fatal(err)
	}
	if c := srv.Calls(); len(c) != 0 {
		t.Fatalf("building the agent called the server: %+v", c)
	}

	a := stack(t, agent)
	id := ids.New("s")
	if _, err := a.Sessions.Create(ctx, id, "alice", "files"); err != nil {
		t.Fatal(err)
	}
	alice := reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}
	if _, err := a.Sessions.Post(ctx, id, alice, "Clean up /srv."); err != nil {
		t.Fatal(err)
	}
	out, err := a.Runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Suspended || out.Cause != reducer.CauseApproval {
		t.Fatalf("outcome = %+v, want suspended for approval", out)
	}
	// The model was offered the Go tool and the allowed tools the server
	// lists (an allowed tool it did not list would fail the turn here:
	// TestTurnWithAnUnlistedMCPToolFails).
	reqs := m.requests()
	if len(reqs) != 1 || offered(t, reqs[0]) != "note,lookup,set_flag,delete_file" {
		t.Fatalf("offered %s", offered(t, reqs[0]))
	}
	sess, err := a.Sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if p := sess.State.Turn.Pending; len(p) != 1 || p[0].Tool != mcptest.Delete {
		t.Fatalf("pending = %+v, want one approval for delete_file", p)
	}
	if got := called(srv); got != "lookup,set_flag" {
		t.Fatalf("server saw %s before the approval, want lookup,set_flag", got)
	}
	if noted != 0 {
		t.Fatal("the Go tool ran on invalid input")
	}
	ps := read(t, a, id, out.Turn)
	if e := part(ps, parts.ToolOutputError); e == nil || !strings.Contains(e.ErrorText, "invalid input for tool note") {
		t.Fatalf("note's error result = %+v", e)
	}
	// The offered MCP tools are recorded, with their rules, in the turn's
	// first chunk, beside its first step.
	rec := part(ps, turn.DataTools)
	if rec == nil {
		t.Fatal("no data-tools part in the stream")
	}
	var listed struct{ Tools []tool.Listed }
	if err := json.Unmarshal(rec.Data, &listed); err != nil || len(listed.Tools) != 3 ||
		listed.Tools[2].Name != mcptest.Delete || !listed.Tools[2].Approval || listed.Tools[0].Effect != tool.Read || !listed.Tools[1].Idempotent {
		t.Fatalf("recorded %s (%v)", rec.Data, err)
	}
	t.Logf("the record of 3 MCP tools takes %d bytes of the first chunk", len(rec.Data))
	// The idempotent MCP call went through the ledger like any side effect.
	if ex := executions(t, a, id); ex != "set_flag" {
		t.Fatalf("executions = %s, want set_flag", ex)
	}

	// The server's list changes: a tool removed, a schema changed, a tool
	// added.
	srv.Remove(mcptest.Lookup)
	srv.Add(&sdkmcp.Tool{Name: mcptest.SetFlag, Description: "Set a flag, for a while.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"ttl":{"type":"integer"}},"required":["name","ttl"]}`)})
	srv.Add(&sdkmcp.Tool{Name: "rename_file", Description: "Rename a file.", InputSchema: json.RawMessage(`{"type":"object"}`)})

	if err := a.Sessions.Answer(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "bob"}, reducer.Answer{ApprovalID: sess.State.Turn.Pending[0].ID, Decision: reducer.Approve, Reason: ""}); err != nil {
		t.Fatal(err)
	}
	// The next step's first try fails: the turn suspends for the model,
	// and the same durable state is rebuilt by the next invocation.
	m.mu.Lock()
	m.fail = 1
	m.mu.Unlock()
	out, err = a.Runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseModelUnavailable {
		t.Fatalf("resume = %+v, %v, want suspended as model-unavailable", out, err)
	}
	// Approved, the destructive call ran once, by name.
	if got := called(srv); got != "lookup,set_flag,delete_file" {
		t.Fatalf("server saw %s, want lookup,set_flag,delete_file", got)
	}
	passWake(t, a, id)
	out, err = a.Runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume = %+v, %v", out, err)
	}
	reqs = m.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	// Every invocation offered the recorded tools, byte for byte.
	for i, r := range reqs[1:] {
		if toolsOf(t, r) != toolsOf(t, reqs[0]) {
			t.Fatalf("request %d offered\n%s\nwant the recorded\n%s", i+1, toolsOf(t, r), toolsOf(t, reqs[0]))
		}
	}
	// The step asked by two invocations from the same durable state got
	// byte-identical input.
	if !bytes.Equal(reqs[1], reqs[2]) {
		t.Fatalf("rebuilt model input differs:\n%s\n%s", reqs[1], reqs[2])
	}
	if ex := executions(t, a, id); ex != "set_flag,delete_file" {
		t.Fatalf("executions = %s, want set_flag,delete_file", ex)
	}
	calls := srv.Calls()
	del := calls[2]
	if del.Header.Get("Authorization") != "Bearer s3cret" || !strings.HasPrefix(del.Meta["baton.run/idempotencyKey"].(string), id+"/") {
		t.Fatalf("delete_file call = %+v", del)
	}
	ps = read(t, a, id, out.Turn)
	var deleted bool
	var gone *parts.Part
	for i, p := range ps {
		if p.Type == parts.ToolOutputAvailable && string(p.Output) == `"deleted /srv/old.log"` {
			deleted = true
		}
		if p.Type == parts.ToolOutputError && strings.HasSuffix(p.ToolCallID, "_1_0") {
			gone = &ps[i]
		}
	}
	if !deleted {
		t.Fatal("no output of delete_file in the stream")
	}
	// The model's second call of lookup, which the server no longer has,
	// came back as a clear error result.
	if gone == nil || !strings.Contains(gone.ErrorText, `unknown tool "lookup"`) {
		t.Fatalf("lookup after its removal = %+v", gone)
	}
	if n := strings.Count(called(srv), "lookup"); n != 1 {
		t.Fatalf("server ran lookup %d times", n)
	}
}

func called(s *mcptest.Server) string {
	var out []string
	for _, c := range s.Calls() {
		out = append(out, c.Tool)
	}
	return strings.Join(out, ",")
}

func read(t *testing.T, a *app.App, id, stream string) []parts.Part {
	t.Helper()
	page, err := a.Sessions.ReadStream(context.Background(), id, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]parts.Part, len(page.Entries))
	for i, e := range page.Entries {
		out[i] = e.Part
	}
	return out
}

func part(ps []parts.Part, typ parts.Type) *parts.Part {
	for i := range ps {
		if ps[i].Type == typ {
			return &ps[i]
		}
	}
	return nil
}

// executions lists the tools whose start the ledger recorded, in order.
func executions(t *testing.T, a *app.App, id string) string {
	t.Helper()
	fs, err := a.Sessions.Facts(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		if f.Type == reducer.ExecutionStarted {
			out = append(out, f.Execution.Tool)
		}
	}
	return strings.Join(out, ",")
}

// filesAgent is a Go agent whose only tools are the files server's
// lookup and delete_file.
func filesAgent(t *testing.T, name, url, script string, lim baton.Limits) (*turn.Agent, *recorder) {
	t.Helper()
	s, err := baton.Script([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	m := &recorder{next: s}
	agent, err := app.GoAgent(baton.Agent{Name: name, Model: m, Limits: lim,
		MCP: []baton.MCPServer{{Name: "files", URL: url, Allow: []string{mcptest.Lookup, mcptest.Delete}}}}, providers.MCP())
	if err != nil {
		t.Fatal(err)
	}
	return agent, m
}

func post(t *testing.T, a *app.App, agent, text string) string {
	t.Helper()
	ctx := context.Background()
	id := ids.New("s")
	if _, err := a.Sessions.Create(ctx, id, "alice", agent); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sessions.Post(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, text); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestTurnWithAnMCPServerDownAtStartSuspends: a server that answers 503,
// refuses connections or never answers when a turn starts suspends the
// turn as tools-unavailable, with a delayed wake and within the step's
// time; the model is not asked. Once the server is back, the turn
// completes with its tools.
func TestTurnWithAnMCPServerDownAtStartSuspends(t *testing.T) {
	ctx := context.Background()
	const script = `{"steps":[
	 {"text":"Looking.","toolCalls":[{"name":"lookup","input":{"path":"/srv/a"}}]},
	 {"text":"Found it."}
	]}`
	refused := mcptest.Start()
	refused.Close()
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hanging.Close()
	defer close(release)
	srv := mcptest.Start()
	defer srv.Close()
	refusedAgent, refusedModel := filesAgent(t, "refused", refused.URL, script, baton.Limits{})
	// No server timeout: the step's time (budget less margin) bounds the listing.
	hangingAgent, hangingModel := filesAgent(t, "hanging", hanging.URL, script, baton.Limits{Budget: 1500 * time.Millisecond, Margin: time.Second})
	backAgent, backModel := filesAgent(t, "back", srv.URL, script, baton.Limits{})
	a := stack(t, refusedAgent, hangingAgent, backAgent)
	for _, tc := range []struct {
		name string
		m    *recorder
	}{
		{"refused", refusedModel},
		{"hanging", hangingModel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			id := post(t, a, tc.name, "Look.")
			out, err := a.Runner.Start(ctx, id)
			if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseToolsUnavailable {
				t.Fatalf("outcome = %+v, %v, want suspended as tools-unavailable", out, err)
			}
			if n := len(m.requests()); n != 0 {
				t.Fatalf("the model was asked %d times", n)
			}
			fs, err := a.Sessions.Facts(ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			if last := fs[len(fs)-1]; last.Type != reducer.TurnSuspended || last.Faults != 1 || last.Wake.IsZero() {
				t.Fatalf("last fact = %+v, want a suspension with a delayed wake", last)
			}
		})
	}

	t.Run("back later", func(t *testing.T) {
		m := backModel
		id := post(t, a, "back", "Look.")
		srv.SetDown(true)
		out, err := a.Runner.Start(ctx, id)
		if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseToolsUnavailable {
			t.Fatalf("outcome = %+v, %v, want suspended as tools-unavailable", out, err)
		}
		if ps := read(t, a, id, out.Turn); part(ps, turn.DataTools) != nil {
			t.Fatal("a failed listing was recorded")
		}
		srv.SetDown(false)
		passWake(t, a, id)
		out, err = a.Runner.Resume(ctx, id)
		if err != nil || out.Kind != turn.Completed {
			t.Fatalf("resume = %+v, %v, want completed", out, err)
		}
		if reqs := m.requests(); len(reqs) != 2 || offered(t, reqs[0]) != "lookup,delete_file" {
			t.Fatalf("requests %d, offered %s", len(reqs), offered(t, reqs[0]))
		}
		if got := called(srv); got != "lookup" {
			t.Fatalf("server saw %s", got)
		}
	})
}

// TestTurnWithAnMCPServerDownOnResumeGivesTheModelAnError: a server that
// is down when a turn resumes does not stop it: the turn offers the tools
// it recorded, and the approved call comes back to the model as an error
// result naming the server; the turn goes on to complete.
func TestTurnWithAnMCPServerDownOnResumeGivesTheModelAnError(t *testing.T) {
	ctx := context.Background()
	srv := mcptest.Start()
	defer srv.Close()
	agent, m := filesAgent(t, "files", srv.URL, `{"steps":[
	 {"text":"Deleting.","toolCalls":[{"name":"delete_file","input":{"path":"/srv/a"}}]},
	 {"text":"The file server is down."}
	]}`, baton.Limits{})
	a := stack(t, agent)
	id := post(t, a, "files", "Delete /srv/a.")
	out, err := a.Runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseApproval {
		t.Fatalf("outcome = %+v, %v, want suspended for approval", out, err)
	}
	sess, err := a.Sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Sessions.Answer(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "bob"}, reducer.Answer{ApprovalID: sess.State.Turn.Pending[0].ID, Decision: reducer.Approve, Reason: ""}); err != nil {
		t.Fatal(err)
	}
	srv.SetDown(true)
	out, err = a.Runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume = %+v, %v, want completed", out, err)
	}
	reqs := m.requests()
	if len(reqs) != 2 || toolsOf(t, reqs[1]) != toolsOf(t, reqs[0]) {
		t.Fatalf("%d requests; the resumed one offered %s", len(reqs), toolsOf(t, reqs[len(reqs)-1]))
	}
	e := part(read(t, a, id, out.Turn), parts.ToolOutputError)
	if e == nil || !strings.Contains(e.ErrorText, `mcp server "files": tool delete_file`) || !strings.Contains(e.ErrorText, "Service Unavailable") {
		t.Fatalf("error result = %+v", e)
	}
	t.Logf("the model sees: %s", e.ErrorText)
	if len(srv.Calls()) != 0 {
		t.Fatalf("a call reached the tool: %+v", srv.Calls())
	}
}

// passWake moves the store's clock past the delayed wake of the session's
// fault suspension, as the wait for that wake would.
func passWake(t *testing.T, a *app.App, id string) {
	t.Helper()
	sess, err := a.Sessions.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.State.Turn == nil {
		return
	}
	d := sess.State.Turn.Wake.Sub(a.Sessions.Clock())
	if d <= 0 {
		return
	}
	prev := a.Sessions.Now
	if prev == nil {
		prev = time.Now
	}
	a.Sessions.Now = func() time.Time { return prev().Add(d) }
}
