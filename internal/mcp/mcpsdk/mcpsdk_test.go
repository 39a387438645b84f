package mcpsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/mcp/mcpsdk"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/internal/tool"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func server(url string) mcp.Server {
	return mcp.Server{Name: "files", URL: url,
		HeaderEnv: map[string]string{"Authorization": "FILES_TOKEN"},
		Allow:     []string{mcptest.Lookup, mcptest.Delete, mcptest.SetFlag}}
}

var dialer = mcpsdk.Dialer{Getenv: env(map[string]string{"FILES_TOKEN": "Bearer s3cret"})}

func TestToolsListsAllowedToolsWithTheirRules(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	tools, err := dialer.Tools(context.Background(), server(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	type rules struct {
		effect     tool.Effect
		idempotent bool
		approval   bool
	}
	want := map[string]rules{
		mcptest.Lookup:  {tool.Read, true, false},
		mcptest.Delete:  {tool.External, false, true},
		mcptest.SetFlag: {tool.External, true, false},
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		got := rules{tl.Effect, tl.Idempotent, tl.Approval(json.RawMessage(`{"path":"/x"}`))}
		if got != want[tl.Name] {
			t.Errorf("%s: rules %+v, want %+v", tl.Name, got, want[tl.Name])
		}
		var schema map[string]any
		if err := json.Unmarshal(tl.Schema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: schema %s", tl.Name, tl.Schema)
		}
		if tl.Description == "" {
			t.Errorf("%s: no description", tl.Name)
		}
	}
	// The allow list decides, in its order; the hidden tool never appears.
	if strings.Join(names, ",") != "lookup,delete_file,set_flag" {
		t.Fatalf("tools = %v", names)
	}
	// The listed schemas compile, so a registry validates input with them.
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	var ie *tool.InputError
	if err := reg.Check(mcptest.Lookup, json.RawMessage(`{"path":7}`)); !errors.As(err, &ie) {
		t.Fatalf("bad input: %v", err)
	}
}

func TestCallReachesTheServerWithHeadersAndKey(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	tools, err := dialer.Tools(context.Background(), server(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tools[0].Run(context.Background(), tool.Call{ID: "c1", Name: mcptest.Lookup, Input: json.RawMessage(`{"path":"/etc/hosts"}`), IdempotencyKey: "s/t/call_c1"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil || got["bytes"] != float64(1000) || got["path"] != "/etc/hosts" {
		t.Fatalf("structured result = %s (%v)", out, err)
	}
	// Text content comes back as a JSON string.
	out, err = tools[1].Run(context.Background(), tool.Call{ID: "c2", Name: mcptest.Delete, Input: json.RawMessage(`{"path":"/tmp/a"}`)})
	if err != nil || string(out) != `"deleted /tmp/a"` {
		t.Fatalf("text result = %s, %v", out, err)
	}
	// A result the server marks as an error is the model's error to see.
	_, err = tools[2].Run(context.Background(), tool.Call{ID: "c3", Name: mcptest.SetFlag, Input: json.RawMessage(`{"name":"broken","value":true}`)})
	if err == nil || !strings.Contains(err.Error(), "flag broken is read-only") {
		t.Fatalf("error result: %v", err)
	}

	calls := srv.Calls()
	if len(calls) != 3 {
		t.Fatalf("server saw %d calls", len(calls))
	}
	for _, c := range calls {
		if h := c.Header.Get("Authorization"); h != "Bearer s3cret" {
			t.Errorf("%s: Authorization = %q, want the value of FILES_TOKEN", c.Tool, h)
		}
	}
	if k := calls[0].Meta[mcp.IdempotencyKeyMeta]; k != "s/t/call_c1" {
		t.Errorf("idempotency key in _meta = %v", k)
	}
}

func TestToolsRefusesBadConfiguration(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	ctx := context.Background()
	for name, c := range map[string]struct {
		s     mcp.Server
		d     mcpsdk.Dialer
		field string
		want  string
	}{
		"no allow list":       {mcp.Server{Name: "f", URL: srv.URL}, dialer, "allow", "lists no tools"},
		"bad url":             {mcp.Server{Name: "f", URL: "files.local", Allow: []string{"x"}}, dialer, "url", "absolute http"},
		"no name":             {mcp.Server{URL: srv.URL, Allow: []string{"x"}}, dialer, "name", "missing"},
		"bad header":          {mcp.Server{Name: "f", URL: srv.URL, Allow: []string{"x"}, HeaderEnv: map[string]string{"X Y": "V"}}, dialer, "headerEnv.X Y", "header name"},
		"empty header env":    {server(srv.URL), mcpsdk.Dialer{Getenv: env(nil)}, "headerEnv.Authorization", "FILES_TOKEN is empty"},
		"repeated allow name": {mcp.Server{Name: "f", URL: srv.URL, Allow: []string{"lookup", "lookup"}}, dialer, "allow", "repeated"},
		"negative timeout":    {mcp.Server{Name: "f", URL: srv.URL, Allow: []string{"x"}, Timeout: -1}, dialer, "timeout", "negative"},
	} {
		_, err := c.d.Tools(ctx, c.s)
		var ce *mcp.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want a ConfigError on %s mentioning %q", name, err, c.field, c.want)
		}
	}
	if len(srv.Calls()) != 0 {
		t.Fatalf("a refused configuration called tools: %v", srv.Calls())
	}
}

func TestDownServerGivesAClearError(t *testing.T) {
	srv := mcptest.Start()
	tools, err := dialer.Tools(context.Background(), server(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	_, err = tools[0].Run(context.Background(), tool.Call{ID: "c1", Name: mcptest.Lookup, Input: json.RawMessage(`{"path":"/a"}`)})
	if err == nil || !strings.Contains(err.Error(), `mcp server "files"`) || !strings.Contains(err.Error(), "connect") {
		t.Fatalf("down server: %v", err)
	}
	t.Logf("the model sees: %v", err)
	// Listing a down server fails the same way.
	if _, err := dialer.Tools(context.Background(), server(srv.URL)); err == nil || !strings.Contains(err.Error(), "list tools") || !errors.Is(err, tool.ErrUnavailable) {
		t.Fatalf("list down server: %v", err)
	}
}

func TestHangingServerEndsAtTheDeadline(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	// In front of the server, a proxy that stops answering once hang is set:
	// it accepts the request and never replies.
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var hang atomic.Bool
	release := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hang.Load() {
			proxy.ServeHTTP(w, r)
			return
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer front.Close()
	defer close(release)

	tools, err := dialer.Tools(context.Background(), server(front.URL))
	if err != nil {
		t.Fatal(err)
	}
	hang.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = tools[0].Run(ctx, tool.Call{ID: "c1", Name: mcptest.Lookup, Input: json.RawMessage(`{"path":"/a"}`)})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging server: %v, want a deadline error", err)
	}

	// The server's own timeout bounds a call whose caller set no deadline.
	s := server(front.URL)
	s.Timeout = 300 * time.Millisecond
	hang.Store(false)
	tools, err = dialer.Tools(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	hang.Store(true)
	_, err = tools[0].Run(context.Background(), tool.Call{ID: "c2", Name: mcptest.Lookup, Input: json.RawMessage(`{"path":"/a"}`)})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("server timeout: %v, want a deadline error", err)
	}
}

// TestToolsetCallsRecordedToolsByName: tools made from a listing call the
// server by name, whatever it lists by then. A tool it no longer has, a
// tool the allow list no longer names and a tool of a server no longer
// configured each end in an error the model sees; only the first reaches
// the server.
func TestToolsetCallsRecordedToolsByName(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	ctx := context.Background()
	s := server(srv.URL)
	ts := mcp.Toolset{Dialer: dialer, Getenv: dialer.Getenv, Servers: []mcp.Server{s},
		Approvals: map[string]tool.Rule{mcptest.SetFlag: {Always: true}}}
	if err := ts.Check(); err != nil {
		t.Fatal(err)
	}
	listed, err := ts.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range listed {
		names = append(names, l.Name)
	}
	if strings.Join(names, ",") != "lookup,delete_file,set_flag" {
		t.Fatalf("listed %v", names)
	}
	srv.Remove(mcptest.Lookup)
	gone := append(listed, tool.Listed{Source: "files", Name: mcptest.Hidden, Schema: json.RawMessage(`{"type":"object"}`), Effect: tool.Read},
		tool.Listed{Source: "old", Name: "x", Schema: json.RawMessage(`{"type":"object"}`), Effect: tool.External, Approval: true})
	tools := ts.Tools(gone)
	byName := map[string]tool.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	if !byName[mcptest.SetFlag].Approval(nil) || !byName[mcptest.Delete].Approval(nil) || byName[mcptest.Lookup].Approval(nil) || !byName["x"].Approval(nil) {
		t.Fatal("approval rules not applied")
	}
	for name, want := range map[string]string{
		mcptest.Lookup: `unknown tool "lookup"`,
		mcptest.Hidden: "no longer allowed",
		"x":            `mcp server "old" is no longer configured`,
	} {
		_, err := byName[name].Run(ctx, tool.Call{ID: "c", Name: name, Input: json.RawMessage(`{"path":"/a"}`)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		t.Logf("%s: the model sees: %v", name, err)
	}
	if c := srv.Calls(); len(c) != 0 {
		t.Fatalf("calls reached the server's handlers: %+v", c)
	}
}

// TestToolsetApprovalsFailClosed: an agent's rule for a listed tool with a
// loose schema asks for every call it cannot read, and the listing's own
// destructive default does not come back for a call it can.
func TestToolsetApprovalsFailClosed(t *testing.T) {
	listed := []tool.Listed{{Source: "files", Name: mcptest.Delete, Schema: json.RawMessage(`{"type":"object"}`),
		Effect: tool.External, Approval: true}}
	ts := mcp.Toolset{Dialer: dialer, Getenv: dialer.Getenv, Servers: []mcp.Server{server("http://127.0.0.1:1")},
		Approvals: map[string]tool.Rule{mcptest.Delete: {PathPrefix: &tool.PrefixRule{Field: "path", Prefix: "/srv/keep"}}}}
	del := ts.Tools(listed)[0]
	for in, want := range map[string]bool{
		`{"path":"/srv/tmp/x"}`:                      false,
		`{"path":"/srv/keep/x"}`:                     true,
		`{"Path":"/srv/keep/x"}`:                     true,
		`{"path":"/srv/tmp/x","PATH":"/srv/keep/x"}`: true,
		`{"path":["/srv/keep/x"]}`:                   true,
		`{"path":"/srv/tmp/../keep/x"}`:              true,
		`{"path":"/SRV/Keep/x"}`:                     true,
		`{}`:                                         true,
	} {
		if got := del.Approval(json.RawMessage(in)); got != want {
			t.Errorf("delete_file(%s): approval = %v, want %v", in, got, want)
		}
	}
}

// TestToolsetRefusesUnlistedTools: an allowed tool the server does not
// list fails the listing with an *mcp.UnlistedError naming each such tool
// (not an unavailable server: no retry mends it), and the dialer logs to
// the logger mcp.WithLog gives it.
func TestToolsetRefusesUnlistedTools(t *testing.T) {
	srv := mcptest.Start()
	defer srv.Close()
	s := server(srv.URL)
	s.Allow = append(s.Allow, "not_yet", "nor_this")
	ts := mcp.Toolset{Dialer: dialer, Getenv: dialer.Getenv, Servers: []mcp.Server{s}}
	_, err := ts.List(context.Background())
	var ue *mcp.UnlistedError
	if !errors.As(err, &ue) || ue.Server != "files" || strings.Join(ue.Tools, ",") != "not_yet,nor_this" || errors.Is(err, tool.ErrUnavailable) {
		t.Fatalf("List = %v, want an UnlistedError naming not_yet and nor_this", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"not_yet", "nor_this"`) || !strings.Contains(msg, `"files"`) {
		t.Errorf("message %q does not name the server and the tools", msg)
	}

	var logs strings.Builder
	down := mcptest.Start()
	down.Close()
	logged := mcp.WithLog(mcpsdk.Dialer{Getenv: dialer.Getenv}, slog.New(slog.NewTextHandler(&logs, nil)))
	if _, err := logged.List(context.Background(), server(down.URL)); !errors.Is(err, tool.ErrUnavailable) {
		t.Fatalf("List = %v, want unavailable", err)
	}
	if !strings.Contains(logs.String(), "mcp server cannot be listed") || !strings.Contains(logs.String(), "server=files") {
		t.Errorf("logs = %q, want the listing failure with the server", logs.String())
	}
	own := slog.New(slog.DiscardHandler)
	if d := mcp.WithLog(mcpsdk.Dialer{Log: own}, slog.Default()).(mcpsdk.Dialer); d.Log != own {
		t.Errorf("WithLog replaced the dialer's own logger")
	}
}
