package test

// The deployed front door, modelled (test/harness: StartDeployed): the real
// bootstraps under a Lambda Runtime API that streams, behind a Lambda
// Function URL with RESPONSE_STREAM or API Gateway's buffered HTTP API,
// with JWTs verified in the function against the issuer's JWKS.

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/baton-run/baton/internal/chat"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/baton-run/baton/internal/auth/authtest"
	"github.com/baton-run/baton/test/harness"
)

// frontLimits are the deployed door's limits at 1/100: Timeout 9 s, hold
// 8.4 s.
func frontLimits() harness.Limits { return harness.AWSLimits().Scaled(0.01) }

func startDeployed(t *testing.T, l harness.Limits) *harness.Deployed {
	t.Helper()
	kumo(t) // the shared in-process kumo, or a skip
	return harness.StartDeployed(t, l, harness.WithAgents(testdataPath(t, "agents.json")),
		harness.WithEnv(map[string]string{"BATON_CHAT_ORIGINS": "https://app.example"}))
}

// call sends a request to the door with token ("" sends none).
func call(t testing.TB, d *harness.Deployed, method, path, token, body string, hdr map[string]string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return reply{code: resp.StatusCode, hdr: resp.Header, body: b}
}

// items counts every item of the stack's table: facts, receipts, all.
func items(t *testing.T, d *harness.Deployed) int32 {
	t.Helper()
	out, err := d.Emulator.Clients.DynamoDB.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(d.Resources.Table)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

func chatBody(id, text string) string {
	b, _ := json.Marshal(map[string]any{
		"id": id, "trigger": "submit-message", "agent": "slow",
		"messages": []any{map[string]any{"id": "m-" + id, "role": "user", "parts": []any{map[string]string{"type": "text", "text": text}}}},
	})
	return string(b)
}

// sseEvent is one data line of a UI message stream, with whether the
// session's turn was still open when it was read.
type sseEvent struct {
	Type     string
	Data     string
	TurnOpen bool
}

// readChat posts a chat message as sub and reads the answer's events as
// they come, noting for each whether the turn was still open.
func readChat(t *testing.T, d *harness.Deployed, sub, id, text string) (int, []sseEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", d.URL+"/chat", strings.NewReader(chatBody(id, text)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.Token(sub))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var evs []sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var v struct{ Type string }
		_ = json.Unmarshal([]byte(data), &v)
		if data == "[DONE]" {
			v.Type = "[DONE]"
		}
		open := false
		if sess, err := d.Store.Load(ctx, chat.SessionID(sub, id)); err == nil {
			open = sess.State.Turn != nil
		}
		evs = append(evs, sseEvent{Type: v.Type, Data: data, TurnOpen: open})
	}
	return resp.StatusCode, evs, sc.Err()
}

// TestDeployedChatStreamsLive: through the Function URL, a chat's text
// reaches the client while its turn is still running, and the answer ends
// with the turn.
func TestDeployedChatStreamsLive(t *testing.T) {
	t.Parallel()
	d := startDeployed(t, frontLimits())
	code, evs, err := readChat(t, d, alice, "live-chat-1", "What is the weather in three cities?")
	if err != nil || code != http.StatusOK {
		t.Fatalf("POST /chat: %d, %v", code, err)
	}
	var live, texts int
	for _, e := range evs {
		if e.Type == "text-delta" {
			texts++
			if e.TurnOpen {
				live++
			}
		}
	}
	t.Logf("%d events, %d text deltas, %d of them while the turn ran", len(evs), texts, live)
	if texts == 0 || live == 0 {
		t.Fatalf("no text reached the client while the turn ran (%d events, %d text deltas)", len(evs), texts)
	}
	if last := evs[len(evs)-1]; last.Type != "[DONE]" {
		t.Fatalf("the answer ends with %q, not [DONE]", last.Data)
	}
}

// TestBufferedDoorChatNotLive: the HTTP API's buffered door, the deployed
// path before the Function URL, gives the client nothing while the turn
// runs: every event arrives after the turn ended (or the door gives up).
func TestBufferedDoorChatNotLive(t *testing.T) {
	t.Parallel()
	d := startDeployed(t, harness.HTTPAPILimits().Scaled(0.2))
	code, evs, err := readChat(t, d, alice, "buffered-chat-1", "What is the weather in three cities?")
	if err != nil {
		t.Fatalf("POST /chat: %v", err)
	}
	for _, e := range evs {
		if e.TurnOpen && e.Type == "text-delta" {
			t.Fatalf("a text delta arrived while the turn ran through a buffered door (status %d)", code)
		}
	}
	t.Logf("buffered door: %d, %d events, all after the turn", code, len(evs))
}

// TestDeployedJWT: a missing token, the wrong issuer, the wrong audience,
// an expired token, a bad signature and alg none each get 401 on every
// kind of route and write nothing; a valid token sees only its own
// sessions and chats.
func TestDeployedJWT(t *testing.T) {
	t.Parallel()
	d := startDeployed(t, frontLimits())
	is := d.Issuer
	good := is.Claims(alice)
	claims := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	bad := map[string]string{
		"missing":         "",
		"wrong issuer":    is.Sign(claims("iss", "https://evil.example/")),
		"wrong audience":  is.Sign(claims("aud", "another-app")),
		"expired":         is.Sign(claims("exp", time.Now().Add(-time.Minute).Unix())),
		"bad signature":   is.SignWrongKey(good),
		"alg none":        authtest.Unsigned(good),
		"kumo-style fake": fakeJWT(t, good),
	}
	routes := []struct{ method, path, body string }{
		{"POST", "/sessions", `{"agent":"slow"}`},
		{"GET", "/sessions", ""},
		{"POST", "/chat", chatBody("jwt-chat-1", "hello")},
		{"GET", "/chat/jwt-chat-1/stream", ""},
		{"POST", "/sessions/s_0193a1b2c3d4e5f60718293a4b5c6d7e/messages", `{"text":"hi"}`},
	}
	before := items(t, d)
	for name, tok := range bad {
		for _, r := range routes {
			if got := call(t, d, r.method, r.path, tok, r.body, nil); got.code != http.StatusUnauthorized {
				t.Errorf("%s token: %s %s answered %v, want 401", name, r.method, r.path, got)
			}
		}
	}
	if after := items(t, d); after != before {
		t.Fatalf("refused requests wrote: %d items before, %d after", before, after)
	}

	// CORS preflights carry no token and are answered for the allowed
	// origin (BATON_CHAT_ORIGINS), on the chat and on the session routes a
	// browser app answers approvals through.
	for _, path := range []string{"/chat", "/chat/c1/stream", "/sessions", "/sessions/s_1/approvals/a_1"} {
		pre := map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "authorization, content-type"}
		r := call(t, d, "OPTIONS", path, "", "", pre)
		if r.code != http.StatusNoContent || r.hdr.Get("Access-Control-Allow-Origin") != "https://app.example" ||
			!strings.Contains(r.hdr.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Errorf("preflight %s: %v %v", path, r, r.hdr)
		}
		pre["Origin"] = "https://evil.example"
		if r := call(t, d, "OPTIONS", path, "", "", pre); r.code != http.StatusForbidden || r.hdr.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight %s from another origin: %v %v", path, r, r.hdr)
		}
	}

	var created struct{ ID string }
	r := call(t, d, "POST", "/sessions", d.Token(alice), `{"agent":"slow"}`, nil)
	if r.code != http.StatusCreated || json.Unmarshal(r.body, &created) != nil || created.ID == "" {
		t.Fatalf("alice creates a session: %v", r)
	}
	if r := call(t, d, "GET", "/sessions/"+created.ID, d.Token(bob), "", nil); r.code != http.StatusNotFound {
		t.Errorf("bob reads alice's session: %v, want 404", r)
	}
	if r := call(t, d, "GET", "/sessions", d.Token(bob), "", nil); r.code != http.StatusOK || strings.Contains(string(r.body), created.ID) {
		t.Errorf("bob's list: %v, must not hold %s", r, created.ID)
	}
	if r := call(t, d, "GET", "/sessions", d.Token(alice), "", nil); r.code != http.StatusOK || !strings.Contains(string(r.body), created.ID) {
		t.Errorf("alice's list: %v, must hold %s", r, created.ID)
	}
	if r := call(t, d, "GET", "/chat/"+created.ID+"/stream", d.Token(bob), "", nil); r.code == http.StatusOK || strings.Contains(string(r.body), "data:") {
		t.Errorf("bob resumes alice's chat: %v", r)
	}
	if r := call(t, d, "POST", "/chat/"+created.ID+"/stop", d.Token(bob), "", nil); r.code != http.StatusNotFound {
		t.Errorf("bob stops alice's chat: %v, want 404", r)
	}
}

// fakeJWT is a token with good claims and a signature that is not one, as
// kumo's JWT authorizer accepts.
func fakeJWT(t *testing.T, claims map[string]any) string {
	t.Helper()
	tok, err := harness.UnverifiedJWT(claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
