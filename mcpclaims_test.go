package baton_test

import (
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/providers"
)

// TestMCPToolClaims: an MCP server's allowed tool declares resource
// claims, as a declared tool does: its call is granted the claim keyed by
// its input before it runs on the server, and releases it once its result
// is recorded. A claim on a tool the allow list does not name, or a
// malformed one, is refused when the agent is built; one on a tool the
// server marks read-only fails the turn's start, naming the tool.
func TestMCPToolClaims(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	flagClaim := map[string][]baton.ClaimDecl{mcptest.SetFlag: {{Namespace: "flags", Field: "name", Access: "write"}}}
	script, err := baton.Script([]byte(`{"steps":[
	 {"text":"Setting.","toolCalls":[{"name":"set_flag","input":{"name":"beta","value":true}}]},
	 {"text":"Set."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	kit := batontest.New(t, host.Config{MCP: providers.MCP(), Agents: []baton.Agent{{Name: "flags", Model: script,
		MCP: []baton.MCPServer{{Name: "flags", URL: srv.URL, Allow: []string{mcptest.SetFlag}, Claims: flagClaim}}}}})
	s := kit.Session("flags")
	s.Post("Turn beta on.")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("turn: %+v, want completed", out)
	}
	var granted, released int
	for _, f := range s.Facts() {
		switch f.Type {
		case reducer.ClaimGranted:
			granted++
			if g := f.Grant; g == nil || len(g.Claims) != 1 || g.Claims[0].Namespace != "flags" || g.Claims[0].Key != "beta" {
				t.Errorf("claim.granted %+v, want the flags claim on beta", f.Grant)
			}
		case reducer.ClaimReleased:
			released++
		}
	}
	if granted != 1 || released != 1 {
		t.Errorf("%d grants and %d releases, want one each", granted, released)
	}
	if calls := srv.Calls(); len(calls) != 1 || calls[0].Tool != mcptest.SetFlag {
		t.Errorf("server calls %+v, want the one set_flag", calls)
	}

	for name, bad := range map[string]map[string][]baton.ClaimDecl{
		"a tool not allowed": {mcptest.Delete: {{Namespace: "files", Field: "path", Access: "write"}}},
		"a malformed claim":  {mcptest.SetFlag: {{Namespace: "flags", Access: "write"}}},
	} {
		_, err := app.GoAgent(baton.Agent{Name: "flags", Model: script, MCP: []baton.MCPServer{{Name: "flags", URL: srv.URL,
			Allow: []string{mcptest.SetFlag}, Claims: bad}}}, providers.MCP())
		if err == nil || !strings.Contains(err.Error(), "claims") {
			t.Errorf("%s: build = %v, want an error naming the claims", name, err)
		}
	}

	ro := batontest.New(t, host.Config{MCP: providers.MCP(), Agents: []baton.Agent{{Name: "files", Model: script,
		MCP: []baton.MCPServer{{Name: "files", URL: srv.URL, Allow: []string{mcptest.Lookup},
			Claims: map[string][]baton.ClaimDecl{mcptest.Lookup: {{Namespace: "files", Field: "path", Access: "read"}}}}}}}})
	r := ro.Session("files")
	r.Post("Look.")
	if out := r.Run(); out.Kind != batontest.Failed {
		t.Fatalf("a read-only tool with claims: %+v, want the turn failed", out)
	}
	if st := r.State(); st.LastFailure == nil || !strings.Contains(st.LastFailure.Error, mcptest.Lookup) {
		t.Fatalf("failure %+v, want one naming %s", st.LastFailure, mcptest.Lookup)
	}
}
