package devserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDevServerServesMCP: the dev server serves its agents at /mcp (every
// one, BATON_MCP_AGENTS being unset): the Go SDK's client lists the demo
// agent, and a call of it answers with the session its turn waits in, for
// the approval the demo agent asks before it emails.
func TestDevServerServesMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base, _ := serve(t, ctx, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "baton-dev-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Extensions["io.modelcontextprotocol/tasks"] == nil {
		t.Errorf("the handshake does not name the tasks extension: %+v", ir)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "demo") {
		t.Fatalf("tools/list: %v, want every local agent, the demo among them", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo", Arguments: map[string]any{"message": "Send the team a status update"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	id, _ := sc["session"].(string)
	if sc["status"] != "input_required" || id == "" {
		t.Fatalf("the demo's call answered %+v, want its session waiting for an approval", sc)
	}
	// The session is the local operator's, as the API shows it.
	resp, err := http.Get(base + "/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Pending []struct{ Tool string } `json:"pending"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Pending) != 1 || !strings.Contains(st.Pending[0].Tool, "email") {
		t.Fatalf("GET /sessions/%s: %v %+v", id, err, st)
	}
}
