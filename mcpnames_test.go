package baton_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
	"github.com/baton-run/baton/providers"
)

// TestTurnWithAnUnlistedMCPToolFails: an agent that allows a tool its
// server does not list fails its turn at the start, before the model is
// asked; the turn.failed fact and the stream's error part name the tool.
func TestTurnWithAnUnlistedMCPToolFails(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	s, err := baton.Script([]byte(`{"steps":[{"text":"Done."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := &recorder{next: s}
	agent, err := app.GoAgent(baton.Agent{Name: "files", Model: m,
		MCP: []baton.MCPServer{{Name: "files", URL: srv.URL, Allow: []string{mcptest.Lookup, "not_there"}}}}, providers.MCP())
	if err != nil {
		t.Fatal(err)
	}
	a := stack(t, agent)
	id := post(t, a, "files", "Look.")
	out, err := a.Runner.Start(context.Background(), id)
	if err != nil || out.Kind != turn.Failed {
		t.Fatalf("outcome = %+v, %v, want failed", out, err)
	}
	if n := len(m.requests()); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
	fs, err := a.Sessions.Facts(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := fs[len(fs)-1]
	if last.Type != reducer.TurnFailed || last.Failure == nil || last.Failure.Kind != reducer.FailTool ||
		!strings.Contains(last.Failure.Error, `does not list the allowed tool "not_there"`) {
		t.Fatalf("last fact = %+v (%+v), want turn.failed naming not_there", last, last.Failure)
	}
	if e := part(read(t, a, id, out.Turn), parts.Error); e == nil || !strings.Contains(e.ErrorText, `"not_there"`) {
		t.Fatalf("stream error part = %+v, want one naming not_there", e)
	}
}

// syncBuffer is a log sink safe for the turn's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMCPClientLogsToTheAppsLogger: providers.MCP() carries no logger of
// its own; the App gives it its logger, so a server that cannot be listed
// at a turn's start is logged where the app logs.
func TestMCPClientLogsToTheAppsLogger(t *testing.T) {
	down := mcptest.Start()
	down.Close()
	s, err := baton.Script([]byte(`{"steps":[{"text":"Done."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := testenv.Provision(ctx, testenv.Emulator(), baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	a, err := app.NewOn(ctx, app.Config{MCP: providers.MCP(), Agents: []baton.Agent{{Name: "files", Model: s,
		MCP: []baton.MCPServer{{Name: "files", URL: down.URL, Allow: []string{mcptest.Lookup}}}}}},
		app.Resources{Table: e.Table, Bucket: e.Bucket, QueueURL: e.QueueURL}, e.Clients().Config, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	id := ids.New("s")
	if _, err := a.Sessions.Create(ctx, id, "alice", "files"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sessions.Post(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, "Look."); err != nil {
		t.Fatal(err)
	}
	if out, err := a.Runner.Start(ctx, id); err != nil || out.Cause != reducer.CauseToolsUnavailable {
		t.Fatalf("outcome = %+v, %v, want suspended as tools-unavailable", out, err)
	}
	if got := logs.String(); !strings.Contains(got, "mcp server cannot be listed") || !strings.Contains(got, "server=files") {
		t.Errorf("the app's log has no word of the server:\n%s", got)
	}
}
