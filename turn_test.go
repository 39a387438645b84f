package baton_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/pkg/app"
	"github.com/baton-run/baton/pkg/emulator"
	"github.com/baton-run/baton/pkg/ids"
	"github.com/baton-run/baton/pkg/mcp/mcptest"
	"github.com/baton-run/baton/pkg/provision"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// stack wires baton as a program would, with app.NewWith, on kumo (or the
// endpoint in AWS_ENDPOINT_URL), with fresh resources and the Go agents.
func stack(t *testing.T, agents ...*turn.Agent) *app.App {
	t.Helper()
	ctx := context.Background()
	e := emulator.Start()
	t.Cleanup(e.Close)
	name := strings.ToLower(ids.New("lib"))
	res, err := provision.Provision(ctx, e.Clients, baton.Template(), provision.Names{Table: name, Bucket: name, Queue: name})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.NewWith(ctx, app.Env{Table: res.Table, Bucket: res.Bucket, QueueURL: res.QueueURL}, e.Clients,
		slog.New(slog.NewTextHandler(io.Discard, nil)), app.Extras{Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestTurnCallsMCPToolsAndWaitsForApproval runs a Go agent whose tools are
// a Go Func and the three tools of a real MCP server over HTTP. The model
// calls all of them in one step: the read-only and the idempotent MCP tools
// run, the Go tool's bad input comes back as an error result, and the
// destructive MCP tool waits for an operator; once approved it runs, once.
func TestTurnCallsMCPToolsAndWaitsForApproval(t *testing.T) {
	ctx := context.Background()
	srv := mcptest.Start()
	defer srv.Close()
	t.Setenv("FILES_TOKEN", "Bearer s3cret")

	m, err := baton.Script([]byte(`{"steps":[
	 {"text":"Cleaning up.","toolCalls":[
	  {"name":"lookup","input":{"path":"/srv/old.log"}},
	  {"name":"set_flag","input":{"name":"maintenance","value":true}},
	  {"name":"delete_file","input":{"path":"/srv/old.log"}},
	  {"name":"note","input":{"txt":"typo"}}
	 ]},
	 {"text":"Done."}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	noted := 0
	note := baton.Func("note", "Write a note.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		noted++
		return "noted", nil
	}, baton.Read())
	agent, err := baton.Agent{
		Name: "files", Model: m, System: "You tidy up servers.",
		Tools: []baton.Tool{note},
		MCP: []baton.MCPServer{{Name: "files", URL: srv.URL,
			HeaderEnv: map[string]string{"Authorization": "FILES_TOKEN"},
			Allow:     []string{mcptest.Lookup, mcptest.SetFlag, mcptest.Delete}}},
	}.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The model is offered exactly the Go tool and the allowed MCP tools.
	var offered []string
	for _, s := range agent.Tools.Specs() {
		offered = append(offered, s.Name)
	}
	if strings.Join(offered, ",") != "note,lookup,set_flag,delete_file" {
		t.Fatalf("offered %v", offered)
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
	if e := part(ps, streams.ToolOutputError); e == nil || !strings.Contains(e.ErrorText, "invalid input for tool note") {
		t.Fatalf("note's error result = %+v", e)
	}
	// The idempotent MCP call went through the ledger like any side effect.
	if ex := executions(t, a, id); ex != "set_flag" {
		t.Fatalf("executions = %s, want set_flag", ex)
	}

	if err := a.Sessions.Answer(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "bob"}, sess.State.Turn.Pending[0].ID, reducer.Approve, ""); err != nil {
		t.Fatal(err)
	}
	out, err = a.Runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume = %+v, %v", out, err)
	}
	// Approved, the destructive call ran once; nothing ran twice.
	if got := called(srv); got != "lookup,set_flag,delete_file" {
		t.Fatalf("server saw %s, want lookup,set_flag,delete_file", got)
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
	for _, p := range ps {
		if p.Type == streams.ToolOutputAvailable && string(p.Output) == `"deleted /srv/old.log"` {
			deleted = true
		}
	}
	if !deleted {
		t.Fatal("no output of delete_file in the stream")
	}
}

func called(s *mcptest.Server) string {
	var out []string
	for _, c := range s.Calls() {
		out = append(out, c.Tool)
	}
	return strings.Join(out, ",")
}

func read(t *testing.T, a *app.App, id, stream string) []streams.Part {
	t.Helper()
	page, err := a.Sessions.Streams.Read(context.Background(), id, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]streams.Part, len(page.Entries))
	for i, e := range page.Entries {
		out[i] = e.Part
	}
	return out
}

func part(ps []streams.Part, typ streams.PartType) *streams.Part {
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
	fs, err := a.Sessions.Facts.Facts(context.Background(), id, 0)
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

// TestTurnWithADownMCPServerGivesTheModelAnError: a server that goes away
// after the agent was built gives the model an error result, and the turn
// goes on to complete.
func TestTurnWithADownMCPServerGivesTheModelAnError(t *testing.T) {
	ctx := context.Background()
	srv := mcptest.Start()
	m, err := baton.Script([]byte(`{"steps":[
	 {"text":"Looking.","toolCalls":[{"name":"lookup","input":{"path":"/srv/a"}}]},
	 {"text":"The file server is down."}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := baton.Agent{Name: "files", Model: m,
		MCP: []baton.MCPServer{{Name: "files", URL: srv.URL, Allow: []string{mcptest.Lookup}}}}.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()

	a := stack(t, agent)
	id := ids.New("s")
	if _, err := a.Sessions.Create(ctx, id, "alice", "files"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sessions.Post(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, "Look."); err != nil {
		t.Fatal(err)
	}
	out, err := a.Runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("outcome = %+v, %v, want completed", out, err)
	}
	e := part(read(t, a, id, out.Turn), streams.ToolOutputError)
	if e == nil || !strings.Contains(e.ErrorText, `mcp server "files"`) || !strings.Contains(e.ErrorText, "connection refused") {
		t.Fatalf("error result = %+v", e)
	}
}
