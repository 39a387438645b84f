package baton_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-run/baton/providers"

	"github.com/google/jsonschema-go/jsonschema"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// TestTurnAsksWhenARuleCannotReadItsField runs a turn whose model calls an
// MCP tool with a loose schema and a Go tool with a map input, each under
// an "over amount 100" rule, with inputs the rule cannot read as a number
// (the key in another case, the number as a string): both wait for an
// operator, and neither reaches its tool. A readable amount under the
// limit runs. A Go tool that always asks and a destructive MCP tool (which
// asks by default), given input their schemas refuse, get error results
// and no approval request: the schema check comes first for every kind.
func TestTurnAsksWhenARuleCannotReadItsField(t *testing.T) {
	ctx := context.Background()
	srv := mcptest.Start()
	defer srv.Close()
	srv.Add(&sdkmcp.Tool{Name: "charge", Description: "Charge a card.", InputSchema: &jsonschema.Schema{Type: "object"}})

	script, err := baton.Script([]byte(`{"steps":[
	 {"toolCalls":[
	  {"name":"charge","input":{"Amount":250}},
	  {"name":"transfer","input":{"amount":"250"}},
	  {"name":"transfer","input":{"amount":50}},
	  {"name":"pay","input":{"amount":"x"}},
	  {"name":"delete_file","input":{"path":7}}
	 ]},
	 {"text":"Done."}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	var transfers []any
	transfer := baton.Func("transfer", "Move money.", func(_ context.Context, in map[string]any) (string, error) {
		transfers = append(transfers, in["amount"])
		return "moved", nil
	}, baton.NeedsApproval(baton.Over("amount", 100)))
	paid := 0
	pay := baton.Func("pay", "Pay.", func(_ context.Context, in struct {
		Amount float64 `json:"amount"`
	}) (string, error) {
		paid++
		return "paid", nil
	}, baton.NeedsApproval())
	agent, err := app.GoAgent(baton.Agent{
		Name: "money", Model: script, Tools: []baton.Tool{transfer, pay},
		MCP:       []baton.MCPServer{{Name: "cards", URL: srv.URL, Allow: []string{"charge", mcptest.Delete}}},
		Approvals: map[string]baton.Rule{"charge": baton.Over("amount", 100)},
	}, providers.MCP())
	if err != nil {
		t.Fatal(err)
	}
	a := stack(t, agent)
	id := ids.New("s")
	if _, err := a.Sessions.Create(ctx, id, "alice", "money"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sessions.Post(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, "Pay the bills."); err != nil {
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
	var pending []string
	for _, p := range sess.State.Turn.Pending {
		pending = append(pending, p.Tool+string(p.Input))
	}
	if got := strings.Join(pending, " "); got != `charge{"Amount":250} transfer{"amount":"250"}` {
		t.Errorf("pending approvals: %s", got)
	}
	if c := srv.Calls(); len(c) != 0 {
		t.Errorf("the MCP server was called before an approval: %+v", c)
	}
	if len(transfers) != 1 || transfers[0] != 50.0 {
		t.Errorf("transfer ran with amounts %v, want only 50", transfers)
	}
	if paid != 0 {
		t.Error("pay ran on input its schema refuses")
	}
	ps := read(t, a, id, out.Turn)
	asked, errs := 0, []string{}
	for _, p := range ps {
		switch p.Type {
		case parts.ToolApprovalRequest:
			asked++
		case parts.ToolOutputError:
			errs = append(errs, p.ErrorText)
		}
	}
	if asked != 2 {
		t.Errorf("%d approval requests in the stream, want 2 (none for pay or delete_file)", asked)
	}
	if len(errs) != 2 || !strings.Contains(errs[0], "invalid input for tool pay") ||
		!strings.Contains(errs[1], "invalid input for tool delete_file") {
		t.Errorf("error results %q, want pay's and delete_file's invalid input", errs)
	}
}
