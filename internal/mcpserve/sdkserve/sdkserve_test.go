package sdkserve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/mcpserve"
	"github.com/baton-run/baton/internal/mcpserve/sdkserve"
	"github.com/baton-run/baton/internal/memstore"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/streams"
)

// server is the endpoint on a store in memory, serving agent desk, with
// the caller named by the X-Caller header.
func server(t *testing.T) (*httptest.Server, *session.Store) {
	t.Helper()
	store := session.New(memstore.NewLog(nil), streams.New(memstore.NewBucket(nil), "b"))
	h := sdkserve.New(mcpserve.Config{Sessions: store, Agents: []string{"desk"}, Issuer: "https://issuer.example",
		Identity: func(r *http.Request) (string, bool) { c := r.Header.Get("X-Caller"); return c, c != "" }})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, store
}

type rpcAnswer struct {
	Result json.RawMessage
	Error  *struct {
		Code    int
		Message string
	}
}

func rpc(t *testing.T, srv *httptest.Server, caller, method string, params any) rpcAnswer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	r, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("X-Caller", caller)
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var a rpcAnswer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		t.Fatalf("%s: %d: %v", method, res.StatusCode, err)
	}
	return a
}

// TestUnauthorized: without a caller, 401 names the metadata, which names
// the issuer and the resource.
func TestUnauthorized(t *testing.T) {
	srv, _ := server(t)
	res, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	want := `Bearer resource_metadata="` + srv.URL + `/.well-known/oauth-protected-resource/mcp"`
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("%d %q, want 401 %q", res.StatusCode, res.Header.Get("WWW-Authenticate"), want)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		res, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		err = json.NewDecoder(res.Body).Decode(&doc)
		res.Body.Close()
		if err != nil || doc.Resource != srv.URL+"/mcp" || !slices.Equal(doc.AuthorizationServers, []string{"https://issuer.example"}) {
			t.Errorf("GET %s: %v %+v", p, err, doc)
		}
	}
}

// TestBadCallsWriteNothing: a task-augmented call with bad arguments, an
// unknown tool or another caller's session is refused (-32602) and
// creates no session.
func TestBadCallsWriteNothing(t *testing.T) {
	srv, store := server(t)
	ok := rpc(t, srv, "bob", "tools/call", map[string]any{"name": "desk", "arguments": map[string]any{"message": "hi"}, "task": map[string]any{}})
	var created struct {
		Task struct{ TaskID, Status string }
	}
	if ok.Error != nil || json.Unmarshal(ok.Result, &created) != nil || created.Task.Status != "working" {
		t.Fatalf("bob's task: %+v %s", ok.Error, ok.Result)
	}
	bobs, _, _ := strings.Cut(created.Task.TaskID, ".")
	for name, args := range map[string]any{
		"no arguments":    nil,
		"no message":      map[string]any{"text": "hi"},
		"blank":           map[string]any{"message": "  "},
		"unknown field":   map[string]any{"message": "hi", "extra": 1},
		"bob's session":   map[string]any{"message": "hi", "session": bobs},
		"unknown session": map[string]any{"message": "hi", "session": "s_nope"},
	} {
		a := rpc(t, srv, "alice", "tools/call", map[string]any{"name": "desk", "arguments": args, "task": map[string]any{}})
		if a.Error == nil || a.Error.Code != -32602 {
			t.Errorf("%s: %+v %s, want -32602", name, a.Error, a.Result)
		}
	}
	if a := rpc(t, srv, "alice", "tools/call", map[string]any{"name": "nobody", "arguments": map[string]any{"message": "hi"}, "task": map[string]any{}}); a.Error == nil {
		t.Errorf("an unknown tool: %s", a.Result)
	}
	heads, _, err := store.ByOwner(context.Background(), "alice", 10, "")
	if err != nil || len(heads) != 0 {
		t.Fatalf("refused calls left alice %d sessions (%v)", len(heads), err)
	}
	// Bob's task is unknown to alice, on every method.
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if a := rpc(t, srv, "alice", m, map[string]any{"taskId": created.Task.TaskID}); a.Error == nil || !strings.Contains(a.Error.Message, "unknown task") {
			t.Errorf("alice's %s of bob's task: %+v %s", m, a.Error, a.Result)
		}
	}
	if a := rpc(t, srv, "alice", "tasks/list", map[string]any{}); strings.Contains(string(a.Result), created.Task.TaskID) {
		t.Error("alice's tasks/list shows bob's task")
	}
	// Bob's own task waits for its turn; an answer to nothing it waits
	// for is ignored and writes nothing.
	before, _ := store.Facts(context.Background(), bobs, 0)
	if a := rpc(t, srv, "bob", "tasks/update", map[string]any{"taskId": created.Task.TaskID,
		"inputResponses": map[string]any{"ap_x": map[string]any{"action": "accept"}}}); a.Error != nil {
		t.Errorf("an answer to nothing: %+v", a.Error)
	}
	if after, _ := store.Facts(context.Background(), bobs, 0); len(after) != len(before) {
		t.Errorf("an ignored answer wrote %d facts", len(after)-len(before))
	}
	var got struct{ Status, StatusMessage string }
	if a := rpc(t, srv, "bob", "tasks/get", map[string]any{"taskId": created.Task.TaskID}); a.Error != nil || json.Unmarshal(a.Result, &got) != nil || got.Status != "working" {
		t.Errorf("bob's tasks/get: %+v %s", a.Error, a.Result)
	}
}
