package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-run/baton/internal/auth/authtest"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/test/harness"
)

// mcpDeployment is a deployed stack serving agents helper and approver
// over MCP, and agent boss, whose MCP server is that same deployment's
// /mcp, reached with carol's token (an agent file's headerEnv).
type mcpDeployment struct {
	*harness.Deployed
}

// mcpAgents writes the agent file: boss's MCP server is peer's /mcp;
// builder's start_build is an HTTP tool on ci that completes by callback.
func mcpAgents(t testing.TB, peer, ci string) string {
	t.Helper()
	dir := t.TempDir()
	// boss's budget covers its call to helper, whose turn may need a
	// resume process of its own to start.
	limits := `"limits":{"budget":"1500ms","margin":"300ms","leaseGrace":"200ms","maxStepsPerInvocation":20,"maxStepsPerTurn":100,"approvalTTL":"10m"}`
	files := map[string]string{
		"helper.script.json":   `{"steps":[{"delay":"50ms","text":"It is sunny in Paris, 21 degrees."}]}`,
		"approver.script.json": `{"steps":[{"delay":"50ms","text":"I will email the team; an operator approves that.","toolCalls":[{"name":"send_email","input":{"to":"team@example.com","subject":"Note","body":"Hello."}}]},{"delay":"50ms","text":"The note is sent."}]}`,
		"boss.script.json":     `{"steps":[{"delay":"20ms","text":"Let me ask the helper.","toolCalls":[{"name":"helper","input":{"message":"What is the weather in Paris?"}}]},{"delay":"20ms","text":"The helper has answered."}]}`,
		"builder.script.json":  `{"steps":[{"delay":"20ms","text":"Starting the build.","toolCalls":[{"name":"start_build","input":{"ref":"main"}}]},{"delay":"20ms","text":"The build is done."}]}`,
		"agents.json": fmt.Sprintf(`{"agents":{
		 "helper":{"provider":"scripted","script":"helper.script.json","system":"You answer questions about the weather.",%[1]s},
		 "approver":{"provider":"scripted","script":"approver.script.json","system":"You send notes; an operator approves each.","tools":["send_email"],%[1]s},
		 "boss":{"provider":"scripted","script":"boss.script.json","system":"You ask other agents.",
		   "mcp":[{"name":"baton","url":%[2]q,"headerEnv":{"Authorization":"PEER_TOKEN"},"allow":["helper"]}],
		   "approvals":{"helper":"never"},%[3]s},
		 "builder":{"provider":"scripted","script":"builder.script.json","system":"You start builds.",
		   "tools":[{"name":"start_build","kind":"http","description":"Start a CI build; its result comes when it ends.",
		     "schema":{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]},
		     "effect":"external","url":%[4]q,"timeout":"5s","callback":{"timeout":"10m"}}],%[1]s}}}`,
			limits, peer+"/mcp", strings.Replace(limits, `"budget":"1500ms"`, `"budget":"20s"`, 1), ci),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "agents.json")
}

// startMCP starts the deployment. The agent file names the deployment's
// own door before it has one: through a proxy whose target is set once
// the door is up; carol's token is minted before the functions start.
func startMCP(t *testing.T) *mcpDeployment {
	t.Helper()
	kumo(t)
	var target atomic.Pointer[url.URL]
	proxy := httptest.NewServer(&httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		if u := target.Load(); u != nil {
			r.SetURL(u)
		}
	}})
	t.Cleanup(proxy.Close)
	is, err := authtest.Start(harness.DeployedAudience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.Close)
	// builder's CI takes the build and never calls back: the task waits.
	ci := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	t.Cleanup(ci.Close)
	// A 45 s door and a 42 s hold: a plain call waits for its turn even
	// on a loaded machine.
	d := harness.StartDeployed(t, harness.AWSLimits().Scaled(0.05), harness.WithIssuer(is), harness.WithAgents(mcpAgents(t, proxy.URL, ci.URL)), harness.WithPollers(2),
		harness.WithEnv(map[string]string{"BATON_MCP_AGENTS": "helper,approver,builder", "PEER_TOKEN": "Bearer " + is.Token("carol")}))
	u, err := url.Parse(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	target.Store(u)
	return &mcpDeployment{d}
}

// tokenTransport adds a caller's token to every request.
type tokenTransport struct {
	token string
	next  http.RoundTripper
}

func (b tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func (d *mcpDeployment) transport(sub string) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{Endpoint: d.URL + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: tokenTransport{d.Token(sub), http.DefaultTransport}}}
}

// TestMCPDeployed: through the real bootstraps behind the modelled Function
// URL (streaming, JWT), baton's agents are MCP tools: the endpoint refuses
// a caller without a token, pointing to the metadata that names the
// issuer; the official TypeScript SDK's client and the Go SDK's each make
// a plain call (progress, then the answer) and a task that waits for an
// approval, answered through tasks/update and read with tasks/result
// after the client went away and came back; a task is cancelled; another
// caller's task id is unknown; and an agent calls another over MCP.
func TestMCPDeployed(t *testing.T) {
	t.Parallel()
	d := startMCP(t)
	t.Run("unauthorized", func(t *testing.T) { mcpUnauthorized(t, d) })
	t.Run("typescript", func(t *testing.T) { mcpTypeScript(t, d) })
	t.Run("go", func(t *testing.T) { mcpGo(t, d) })
	t.Run("agent", func(t *testing.T) { mcpAgentCallsAgent(t, d) })
	t.Run("callback", func(t *testing.T) { mcpCallback(t, d) })
}

// mcpCallback: a task whose tool waits for its callback is input_required,
// naming the tool; tasks/update completes the call by hand, and the turn
// completes with the model's answer.
func mcpCallback(t *testing.T, d *mcpDeployment) {
	c := d.rpc(t, alice)
	task := c.newTask(t, "builder", "Build main")
	waiting := c.until(t, task, "input_required")
	if !strings.Contains(waiting.StatusMessage, "the callback of tool start_build") || len(waiting.InputRequests) != 1 {
		t.Fatalf("waiting task %+v", waiting)
	}
	var key string
	for k := range waiting.InputRequests {
		key = k
	}
	if !strings.HasPrefix(key, "callback:") {
		t.Fatalf("input request key %q, want callback:CALL", key)
	}
	if _, err := c.call(t, "tasks/update", map[string]any{"taskId": task, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"output": `{"build":7,"status":"passed"}`}}}}); err != nil {
		t.Fatalf("tasks/update: %v", err)
	}
	raw, err := c.call(t, "tasks/result", map[string]string{"taskId": task})
	var result mcp.CallToolResult
	if err != nil || json.Unmarshal(raw, &result) != nil || result.IsError || result.Content[0].(*mcp.TextContent).Text != "The build is done." {
		t.Fatalf("tasks/result: %v %s", err, raw)
	}
	id, _, _ := strings.Cut(task, ".")
	facts, _ := d.Store.Facts(t.Context(), id, 0)
	ended := 0
	for _, f := range facts {
		if f.Type == reducer.CallbackEnded {
			ended++
		}
	}
	if ended != 1 {
		t.Fatalf("%d callback.ended facts, want 1", ended)
	}
}

func mcpUnauthorized(t *testing.T, d *mcpDeployment) {
	res, err := http.Post(d.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	auth := res.Header.Get("WWW-Authenticate")
	if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(auth, `Bearer resource_metadata="`) {
		t.Fatalf("no token: %d, WWW-Authenticate %q; want 401 naming the metadata", res.StatusCode, auth)
	}
	meta := strings.TrimSuffix(strings.TrimPrefix(auth, `Bearer resource_metadata="`), `"`)
	if !strings.HasSuffix(meta, "/.well-known/oauth-protected-resource/mcp") {
		t.Fatalf("resource_metadata %q", meta)
	}
	res, err = http.Get(d.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %d %v", res.StatusCode, err)
	}
	if len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != d.Issuer.URL || !strings.HasSuffix(doc.Resource, "/mcp") {
		t.Fatalf("metadata %+v: want the issuer %s and the /mcp resource", doc, d.Issuer.URL)
	}
	// A forged token is refused the same way.
	r, _ := http.NewRequest("POST", d.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	r.Header.Set("Authorization", "Bearer "+d.Issuer.SignWrongKey(d.Issuer.Claims(alice)))
	r.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(r); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged token: %v %v", res, err)
	}
}

func mcpTypeScript(t *testing.T, d *mcpDeployment) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not on PATH; CI must install it (.ci/run does, from Debian)")
		}
		t.Skip("node is not on PATH: install Node.js and npm to run the MCP TypeScript client test")
	}
	dir, err := filepath.Abs("mcpclient")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BATON_URL="+d.URL, "TOKEN_ALICE="+d.Token(alice), "TOKEN_BOB="+d.Token("bob"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("client: %s", out)
	if err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		ServerCapabilities struct {
			Tasks struct {
				Requests struct {
					Tools struct {
						Call *struct{} `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"serverCapabilities"`
		Tools []struct{ Name, TaskSupport string }
		Plain struct {
			Text, Session string
			IsError       bool
			Progress      []string
		}
		Created struct{ TaskID, Status string }
		Waiting struct {
			StatusMessage string
			Keys          []string
		}
		Result struct {
			Text    string
			IsError bool
		}
		Final  string
		Cancel struct{ TaskID, Status, After, Again string }
		Bob    map[string]string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output: %v", err)
	}
	if got.ServerCapabilities.Tasks.Requests.Tools.Call == nil {
		t.Error("the server does not declare tasks.requests.tools.call")
	}
	if len(got.Tools) != 3 || got.Tools[0].Name != "helper" || got.Tools[1].Name != "approver" || got.Tools[0].TaskSupport != "optional" {
		t.Errorf("tools %+v: want helper, approver and builder (BATON_MCP_AGENTS), tasks optional", got.Tools)
	}
	if got.Plain.IsError || !strings.Contains(got.Plain.Text, "sunny in Paris") || len(got.Plain.Progress) == 0 {
		t.Errorf("plain call %+v: want the helper's answer after progress", got.Plain)
	}
	if got.Created.Status != "working" || !strings.Contains(got.Waiting.StatusMessage, "send_email") || len(got.Waiting.Keys) != 1 {
		t.Errorf("task %+v, waiting %+v: want working, then input_required naming send_email", got.Created, got.Waiting)
	}
	if got.Result.IsError || got.Result.Text != "The note is sent." || got.Final != "completed" {
		t.Errorf("task result %+v, final %s: want the approver's answer, completed", got.Result, got.Final)
	}
	if got.Cancel.Status != "cancelled" || got.Cancel.After != "cancelled" || !strings.Contains(got.Cancel.Again, "-32602") {
		t.Errorf("cancel %+v: want cancelled, and a second cancel refused with -32602", got.Cancel)
	}
	for _, m := range []string{"get", "result", "cancel"} {
		if !strings.Contains(got.Bob[m], "unknown task") {
			t.Errorf("bob's tasks/%s of alice's task: %q, want unknown task", m, got.Bob[m])
		}
	}
	// The facts agree: the approval was answered by alice through the
	// task, and the cancelled task's turn ended cancelled.
	checkTurnEnd(t, d, got.Created.TaskID, reducer.TurnCompleted, alice)
	checkTurnEnd(t, d, got.Cancel.TaskID, reducer.TurnCancelled, alice)
}

// checkTurnEnd checks the last fact of a task's session, and that every
// answer in it is by.
func checkTurnEnd(t *testing.T, d *mcpDeployment, task string, want reducer.Type, by string) {
	t.Helper()
	id, _, _ := strings.Cut(task, ".")
	facts, err := d.Store.Facts(t.Context(), id, 0)
	if err != nil || len(facts) == 0 {
		t.Fatalf("facts of %s: %v", id, err)
	}
	if last := facts[len(facts)-1].Type; last != want {
		t.Errorf("task %s: last fact %s, want %s", task, last, want)
	}
	for _, f := range facts {
		if f.Type == reducer.ApprovalAnswered && f.Actor.ID != by {
			t.Errorf("task %s: approval answered by %s", task, f.Actor.ID)
		}
	}
}

// rpc sends raw JSON-RPC requests through the Go SDK's client transport
// (the SDK's client has no methods for tasks).
type rpc struct {
	conn mcp.Connection
	n    int64
}

func (d *mcpDeployment) rpc(t *testing.T, sub string) *rpc {
	t.Helper()
	conn, err := d.transport(sub).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rpc{conn: conn}
}

func (c *rpc) call(t *testing.T, method string, params any) (json.RawMessage, error) {
	t.Helper()
	c.n++
	id, _ := jsonrpc.MakeID(float64(c.n))
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.conn.Write(t.Context(), &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		msg, err := c.conn.Read(t.Context())
		if err != nil {
			t.Fatalf("%s: read: %v", method, err)
		}
		if res, ok := msg.(*jsonrpc.Response); ok && res.ID == id {
			return res.Result, res.Error
		}
	}
}

type goTask struct {
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
}

func (c *rpc) until(t *testing.T, task, want string) goTask {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		raw, err := c.call(t, "tasks/get", map[string]string{"taskId": task})
		var got goTask
		if err != nil || json.Unmarshal(raw, &got) != nil {
			t.Fatalf("tasks/get %s: %v %s", task, err, raw)
		}
		if got.Status == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%s), never %s", task, got.Status, got.StatusMessage, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *rpc) newTask(t *testing.T, tool, message string) string {
	t.Helper()
	raw, err := c.call(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]string{"message": message}, "task": map[string]any{"ttl": 60000}})
	var created struct{ Task goTask }
	if err != nil || json.Unmarshal(raw, &created) != nil || created.Task.TaskID == "" || created.Task.Status != "working" {
		t.Fatalf("task-augmented tools/call: %v %s", err, raw)
	}
	return created.Task.TaskID
}

func mcpGo(t *testing.T, d *mcpDeployment) {
	ctx := t.Context()
	// A plain call with the SDK's client: progress, then the answer.
	var mu sync.Mutex
	var progress []string
	client := mcp.NewClient(&mcp.Implementation{Name: "baton-go-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		}})
	cs, err := client.Connect(ctx, d.transport(alice), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 3 {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	params := &mcp.CallToolParams{Name: "helper", Arguments: map[string]any{"message": "What is the weather in Paris?"}}
	params.SetProgressToken("p1")
	began := time.Now()
	res, err := cs.CallTool(ctx, params)
	plainTook := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	mu.Lock()
	n := len(progress)
	mu.Unlock()
	if res.IsError || !strings.Contains(text, "sunny in Paris") || n == 0 {
		t.Fatalf("plain call: %q (error %v), %d progress notifications", text, res.IsError, n)
	}
	// The session continues: a second call in it answers too.
	session := res.StructuredContent.(map[string]any)["session"].(string)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "helper", Arguments: map[string]any{"message": "And tomorrow?", "session": session}})
	if err != nil || res.IsError || res.StructuredContent.(map[string]any)["session"] != session {
		t.Fatalf("continued call: %v %+v", err, res)
	}
	// Bad input writes nothing: an unknown session, no message.
	for _, args := range []map[string]any{{"message": "hi", "session": "s_nope"}, {"text": "hi"}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "helper", Arguments: args})
		if err == nil && !res.IsError {
			t.Errorf("call with %v answered without error", args)
		}
	}
	// A plain call whose turn waits for an approval answers at once with
	// its session and what it waits for.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "approver", Arguments: map[string]any{"message": "Send a note"}})
	if err != nil || res.IsError {
		t.Fatalf("approver call: %v %+v", err, res)
	}
	sc := res.StructuredContent.(map[string]any)
	if sc["status"] != "input_required" || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "/approvals/") {
		t.Fatalf("a suspended plain call answered %+v", sc)
	}
	cs.Close()

	// A task that waits for an approval, over the SDK's transport; the
	// client goes away after creating it and comes back with the id.
	c := d.rpc(t, alice)
	began = time.Now()
	task := c.newTask(t, "approver", "Send the team a note")
	createTook := time.Since(began)
	c.conn.Close()
	c = d.rpc(t, alice)
	waiting := c.until(t, task, "input_required")
	if len(waiting.InputRequests) != 1 || !strings.Contains(waiting.StatusMessage, "send_email") {
		t.Fatalf("waiting task %+v", waiting)
	}
	var key string
	for k := range waiting.InputRequests {
		key = k
	}
	// A bad answer is refused and writes nothing; then an edit.
	before, _ := d.Store.Facts(ctx, strings.Split(task, ".")[0], 0)
	if _, err := c.call(t, "tasks/update", map[string]any{"taskId": task, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"decision": "edit", "input": "not json"}}}}); err == nil {
		t.Fatal("an edit without an object was taken")
	}
	if after, _ := d.Store.Facts(ctx, strings.Split(task, ".")[0], 0); len(after) != len(before) {
		t.Fatalf("a refused answer wrote %d facts", len(after)-len(before))
	}
	answered := time.Now()
	if _, err := c.call(t, "tasks/update", map[string]any{"taskId": task, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"decision": "edit",
			"input": `{"to":"ops@example.com","subject":"Note","body":"Edited."}`}}}}); err != nil {
		t.Fatalf("tasks/update: %v", err)
	}
	raw, err := c.call(t, "tasks/result", map[string]string{"taskId": task})
	resultTook := time.Since(answered)
	var result mcp.CallToolResult
	if err != nil || json.Unmarshal(raw, &result) != nil || result.IsError || result.Content[0].(*mcp.TextContent).Text != "The note is sent." {
		t.Fatalf("tasks/result: %v %s", err, raw)
	}
	checkTurnEnd(t, d, task, reducer.TurnCompleted, alice)
	t.Logf("through the door: a plain call to its answer %v; a task created in %v; tasks/update to the tasks/result answer %v",
		plainTook.Round(time.Millisecond), createTook.Round(time.Millisecond), resultTook.Round(time.Millisecond))

	// Declining the approval denies the call, with the reason.
	denied := c.newTask(t, "approver", "Send a third note")
	waiting = c.until(t, denied, "input_required")
	for k := range waiting.InputRequests {
		key = k
	}
	if _, err := c.call(t, "tasks/update", map[string]any{"taskId": denied, "inputResponses": map[string]any{
		key: map[string]any{"action": "decline", "content": map[string]any{"reason": "not today"}}}}); err != nil {
		t.Fatalf("tasks/update decline: %v", err)
	}
	if _, err := c.call(t, "tasks/result", map[string]string{"taskId": denied}); err != nil {
		t.Fatalf("tasks/result of the denied task: %v", err)
	}
	facts, _ := d.Store.Facts(ctx, strings.Split(denied, ".")[0], 0)
	deny := false
	for _, f := range facts {
		deny = deny || f.Type == reducer.ApprovalAnswered && f.Answer != nil && f.Answer.Decision == reducer.Deny && f.Answer.Reason == "not today"
	}
	if !deny {
		t.Fatal("a declined approval was not recorded as a deny with its reason")
	}

	// Cancel a working task; bob cannot see or cancel alice's.
	doomed := c.newTask(t, "approver", "Send another")
	bob := d.rpc(t, "bob")
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/result"} {
		if _, err := bob.call(t, m, map[string]string{"taskId": doomed}); err == nil || !strings.Contains(err.Error(), "unknown task") {
			t.Errorf("bob's %s of alice's task: %v, want unknown task", m, err)
		}
	}
	if _, err := bob.call(t, "tasks/update", map[string]any{"taskId": doomed, "inputResponses": map[string]any{"x": map[string]any{}}}); err == nil {
		t.Error("bob's tasks/update of alice's task was taken")
	}
	raw, err = c.call(t, "tasks/cancel", map[string]string{"taskId": doomed})
	var got goTask
	if err != nil || json.Unmarshal(raw, &got) != nil || got.Status != "cancelled" {
		t.Fatalf("tasks/cancel: %v %s", err, raw)
	}
	checkTurnEnd(t, d, doomed, reducer.TurnCancelled, alice)
	raw, err = c.call(t, "tasks/list", map[string]any{})
	if err != nil || !strings.Contains(string(raw), doomed) || !strings.Contains(string(raw), task) {
		t.Fatalf("tasks/list: %v %.300s", err, raw)
	}
	if raw, _ := bob.call(t, "tasks/list", map[string]any{}); strings.Contains(string(raw), doomed) {
		t.Fatal("bob's tasks/list shows alice's task")
	}
}

// mcpAgentCallsAgent: agent boss calls agent helper as an MCP tool of the
// same deployment, with carol's token: the helper's session is carol's,
// and boss's turn has its answer.
func mcpAgentCallsAgent(t *testing.T, d *mcpDeployment) {
	var s struct{ ID string }
	if r := call(t, d.Deployed, "POST", "/sessions", d.Token(alice), `{"agent":"boss"}`, nil); r.code != http.StatusCreated || json.Unmarshal(r.body, &s) != nil {
		t.Fatalf("create: %v", r)
	}
	if r := call(t, d.Deployed, "POST", "/sessions/"+s.ID+"/messages", d.Token(alice), `{"text":"Ask the helper about Paris"}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("post: %v", r)
	}
	var last reducer.Fact
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		facts, err := d.Store.Facts(t.Context(), s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if last = facts[len(facts)-1]; last.Ends() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("boss's turn did not end: last fact %s", last.Type)
		}
	}
	if last.Type != reducer.TurnCompleted {
		t.Fatalf("boss's turn ended %s %+v", last.Type, last.Failure)
	}
	r := call(t, d.Deployed, "GET", "/sessions/"+s.ID+"/turns/"+last.Turn+"/stream", d.Token(alice), "", nil)
	if !strings.Contains(string(r.body), "sunny in Paris") {
		t.Fatalf("boss's stream has no answer of the helper: %.600s", r.body)
	}
	heads, _, err := d.Store.ByOwner(t.Context(), "carol", 10, "")
	if err != nil || len(heads) != 1 || heads[0].Agent != "helper" {
		t.Fatalf("carol's sessions %+v %v: want the helper's one", heads, err)
	}
}
