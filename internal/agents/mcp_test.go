package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/baton-run/baton/internal/mcp/mcpsdk"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/turn"
)

// loadWith builds a one-file config with the test deps plus the FILES_TOKEN
// variable.
func loadWith(t *testing.T, config string, edit func(*agents.Deps)) (turn.AgentMap, error) {
	t.Helper()
	d := deps(t)
	getenv := d.Getenv
	d.Getenv = func(k string) string {
		if k == "FILES_TOKEN" {
			return "Bearer s3cret"
		}
		return getenv(k)
	}
	d.MCP = mcpsdk.Dialer{Getenv: d.Getenv}
	if edit != nil {
		edit(&d)
	}
	fsys := fstest.MapFS{"agents.json": &fstest.MapFile{Data: []byte(config)}}
	return agents.Load(context.Background(), fsys, "agents.json", d)
}

func mcpServer(url string, members string) string {
	s := `{"name":"files","url":"` + url + `","headerEnv":{"Authorization":"FILES_TOKEN"},"allow":["lookup","delete_file","set_flag"]`
	if members != "" {
		s += "," + members
	}
	return s + "}"
}

func TestMCPSectionBuildsTheAllowedTools(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	m, err := loadWith(t, scripted(`"tools":["get_weather"],"mcp":[`+mcpServer(srv.URL, `"timeout":"5s"`)+`],"approvals":{"set_flag":"always"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The file loads without reaching the server; a turn lists its tools.
	if c := srv.Calls(); len(c) != 0 {
		t.Fatalf("loading called tools: %+v", c)
	}
	a := m["a"]
	listed, err := a.Remote.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(append(a.Tools.Tools(), a.Remote.Tools(listed)...)...)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range reg.Specs() {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "get_weather,lookup,delete_file,set_flag" {
		t.Fatalf("tools = %v", names)
	}
	in := json.RawMessage(`{"path":"/a","name":"f","value":true}`)
	for name, want := range map[string]bool{
		"lookup":      false, // read-only
		"delete_file": true,  // destructive
		"set_flag":    true,  // not destructive, but the agent's approvals say always
	} {
		tl, _ := reg.Get(name)
		if tl.Approval(in) != want {
			t.Errorf("%s: approval = %v, want %v", name, !want, want)
		}
	}
	lookup, _ := reg.Get("lookup")
	if _, err := lookup.Run(context.Background(), tool.Call{ID: "c", Name: "lookup", Input: json.RawMessage(`{"path":"/a"}`)}); err != nil {
		t.Fatal(err)
	}
	if c := srv.Calls(); len(c) != 1 || c[0].Header.Get("Authorization") != "Bearer s3cret" {
		t.Fatalf("calls = %+v", c)
	}
}

func TestBadMCPSections(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	for _, tc := range []struct {
		name, mcp, extra, field, msg string
	}{
		{"unknown member", mcpServer(srv.URL, `"token":"x"`), "", "mcp[0]", `unknown field "token"`},
		{"no allow list", `{"name":"files","url":"` + srv.URL + `"}`, "", "mcp[0].allow", "lists no tools"},
		{"no name", `{"url":"` + srv.URL + `","allow":["lookup"]}`, "", "mcp[0].name", "missing"},
		{"relative url", mcpServer("files.local/mcp", ""), "", "mcp[0].url", "absolute http"},
		{"bad timeout", mcpServer(srv.URL, `"timeout":"soon"`), "", "mcp[0].timeout", "soon"},
		{"header variable empty", `{"name":"files","url":"` + srv.URL + `","headerEnv":{"X-Key":"NOT_SET"},"allow":["lookup"]}`, "", "mcp[0].headerEnv.X-Key", "NOT_SET is empty"},
		{"two servers of one name", mcpServer(srv.URL, "") + `,{"name":"files","url":"` + srv.URL + `","allow":["hidden"]}`, "", "mcp[1].name", "another server"},
		{"two servers allow one tool", mcpServer(srv.URL, "") + `,{"name":"more","url":"` + srv.URL + `","allow":["lookup"]}`, "", "mcp[1].allow", "allows a tool of that name too"},
		{"name clash with a built-in", mcpServer(srv.URL, ""), `"tools":[{"name":"lookup","kind":"http","description":"d","effect":"read","schema":{"type":"object"},"url":"https://x.example/"}]`, "mcp[0].allow", "already has a tool"},
		{"approval for a tool not allowed", mcpServer(srv.URL, ""), `"approvals":{"hidden":"never"}`, "approvals.hidden", "does not have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := `"mcp":[` + tc.mcp + `]`
			if tc.extra != "" {
				extra += "," + tc.extra
			}
			_, err := loadWith(t, scripted(extra), nil)
			all := configErrors(err)
			if len(all) != 1 {
				t.Fatalf("got %v, want one ConfigError", err)
			}
			if all[0].Agent != "a" || all[0].Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q at agent %q field %q, want field %q mentioning %q", err, all[0].Agent, all[0].Field, tc.field, tc.msg)
			}
		})
	}
	if c := srv.Calls(); len(c) != 0 {
		t.Fatalf("building agents called tools: %+v", c)
	}
}

// TestMCPServersAreListedWhenATurnStarts: a file whose server is down
// loads (a cold start does not depend on the servers); listing then fails
// with tool.ErrUnavailable. An allowed tool the server lacks is not
// offered.
func TestMCPServersAreListedWhenATurnStarts(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	down := mcptest.Start()
	down.Close()
	for _, tc := range []struct {
		name, mcp, msg string
		unavailable    bool
	}{
		{"server down", mcpServer(down.URL, ""), "connection refused", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := loadWith(t, scripted(`"mcp":[`+tc.mcp+`]`), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = m["a"].Remote.List(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.msg) || errors.Is(err, tool.ErrUnavailable) != tc.unavailable {
				t.Fatalf("list: %v, want %q (unavailable %v)", err, tc.msg, tc.unavailable)
			}
		})
	}
	m, err := loadWith(t, scripted(`"mcp":[{"name":"files","url":"`+srv.URL+`","allow":["rm_rf","lookup"]}]`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// An allowed tool the server does not list fails the listing, naming it.
	listed, err := m["a"].Remote.List(context.Background())
	var ue *mcp.UnlistedError
	if !errors.As(err, &ue) || len(ue.Tools) != 1 || ue.Tools[0] != "rm_rf" || errors.Is(err, tool.ErrUnavailable) {
		t.Fatalf("listed %+v, %v; want an UnlistedError naming rm_rf", listed, err)
	}
}

func TestJSONAgentNamesAGoTool(t *testing.T) {
	ping := tool.Tool{Name: "ping", Description: "Ping.", Schema: json.RawMessage(`{"type":"object"}`), Effect: tool.Read,
		Run: func(context.Context, tool.Call) (json.RawMessage, error) { return json.RawMessage(`"pong"`), nil }}
	withPing := func(d *agents.Deps) { d.Tools = []tool.Tool{ping} }
	m, err := loadWith(t, scripted(`"tools":["get_weather","ping"]`), withPing)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := m["a"].Tools.Get("ping")
	if !ok {
		t.Fatal("ping missing")
	}
	if out, err := got.Run(context.Background(), tool.Call{}); err != nil || string(out) != `"pong"` {
		t.Fatalf("ping = %s, %v", out, err)
	}
	// Without the registration the name is unknown, as before.
	if _, err := loadWith(t, scripted(`"tools":["ping"]`), nil); err == nil || !strings.Contains(err.Error(), `unknown tool "ping"`) {
		t.Fatalf("unregistered: %v", err)
	}
	// A Go tool may not take a built-in's name.
	clash := ping
	clash.Name = "get_weather"
	_, err = loadWith(t, scripted(`"tools":["get_weather"]`), func(d *agents.Deps) { d.Tools = []tool.Tool{clash} })
	var ce *agents.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `Go tool "get_weather"`) {
		t.Fatalf("clash: %v", err)
	}
}
