package turn_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/mcp/mcpsdk"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// mcpAgent is the demo agent with the files server's lookup as its Remote
// tools.
func mcpAgent(t testing.TB, url string, m model.Model, lim turn.Limits) *turn.Agent {
	t.Helper()
	a := demoAgent(t, m, lim)
	a.Remote = mcp.Toolset{Dialer: mcpsdk.Dialer{Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Servers: []mcp.Server{{Name: "files", URL: url, Allow: []string{mcptest.Lookup}}}}
	return a
}

// TestRecordingTheToolsCostsNoWrite: the record of an agent's MCP tools
// rides in the turn's first chunk, with its first step, so a turn with
// MCP tools makes the same S3 PUTs and DynamoDB writes as one without.
func TestRecordingTheToolsCostsNoWrite(t *testing.T) {
	t.Parallel()
	onEmulator(t) // counts requests, injects faults or reads the queue
	srv := mcptest.Start()
	defer srv.Close()
	ctx := ctxT(t)
	const steps = 3
	var b strings.Builder
	b.WriteString(`{"steps":[`)
	for i := range steps - 1 {
		fmt.Fprintf(&b, `{"text":"step %d","toolCalls":[{"name":"get_weather","input":{"city":"C%d"}},{"name":"lookup","input":{"path":"/p%d"}}]},`, i, i, i)
	}
	b.WriteString(`{"text":"done"}]}`)
	js := b.String()

	counts := map[string][2]int64{}
	var record int
	for _, kind := range []string{"demo", "mcp"} {
		agent := demoAgent(t, script(t, strings.ReplaceAll(js, `"lookup"`, `"get_weather"`)), turn.Limits{})
		if kind == "mcp" {
			agent = mcpAgent(t, srv.URL, script(t, js), turn.Limits{})
		}
		inv := fresh(t, agent)
		id := newSession(t, inv, "go")
		inv.counter.Reset()
		out, err := inv.runner.Start(ctx, id)
		if err != nil || out.Kind != turn.Completed {
			t.Fatalf("%s: %+v %v", kind, out, err)
		}
		counts[kind] = [2]int64{inv.counter.Total("s3:PutObject"),
			inv.counter.Total("dynamodb:TransactWriteItems") + inv.counter.Total("dynamodb:PutItem")}
		ps, _ := readParts(t, inv, id, out.Turn)
		var rec *parts.Part
		for i := range ps {
			if ps[i].Type == turn.DataTools {
				rec = &ps[i]
			}
		}
		if (rec != nil) != (kind == "mcp") {
			t.Fatalf("%s: data-tools part %+v", kind, rec)
		}
		if rec != nil {
			b, _ := json.Marshal(rec)
			record = len(b)
			// The record comes before the first step, in the first chunk.
			if ps[0].Type != parts.Start || ps[1].Type != turn.DataTools || ps[2].Type != parts.StartStep {
				t.Fatalf("stream begins %s, %s, %s", ps[0].Type, ps[1].Type, ps[2].Type)
			}
		}
	}
	if counts["demo"] != counts["mcp"] {
		t.Fatalf("writes (S3 PUTs, DynamoDB writes): demo %v, mcp %v", counts["demo"], counts["mcp"])
	}
	t.Logf("a %d-step turn: %d S3 PUTs and %d DynamoDB writes either way; the record of one MCP tool adds %d bytes",
		steps, counts["mcp"][0], counts["mcp"][1], record)
}

// TestToolsThatStayUnavailableFailTheTurn: a turn whose MCP server stays
// down is suspended with a growing wake and, past the retry policy's
// suspensions, failed as a tool failure that says why.
func TestToolsThatStayUnavailableFailTheTurn(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start()
	srv.Close()
	ctx := ctxT(t)
	agent := mcpAgent(t, srv.URL, script(t, `{"steps":[{"text":"hi"}]}`), turn.Limits{ModelRetry: model.RetryPolicy{Suspensions: 2}})
	inv := fresh(t, agent)
	id := newSession(t, inv, "go")
	out, err := inv.runner.Start(ctx, id)
	for i := 1; err == nil && out.Kind == turn.Suspended; i++ {
		if out.Cause != reducer.CauseToolsUnavailable {
			t.Fatalf("invocation %d: %+v", i, out)
		}
		fs := facts(t, inv, id)
		if last := fs[len(fs)-1]; last.Faults != i {
			t.Fatalf("invocation %d: suspension counts %d faults", i, last.Faults)
		}
		passWake(t, inv, id)
		out, err = inv.runner.Resume(ctx, id)
	}
	if err != nil || out.Kind != turn.Failed || out.Failure.Kind != reducer.FailTool ||
		!strings.Contains(out.Failure.Error, "remote tools stayed unavailable through 2 suspensions") || !strings.Contains(out.Failure.Error, "connection refused") {
		t.Fatalf("outcome = %+v (%+v), %v", out, out.Failure, err)
	}
}
