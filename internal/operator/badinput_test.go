package operator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/pkg/streams"
)

// TestBadInputIsRefusedAndWritesNothing sends each bad request to a session
// that would accept a good one (suspended for approval, with a stream) and
// checks the status, the JSON error, and that the facts did not change.
func TestBadInputIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	// big accepts bodies large enough to reach the text length check.
	big := newEnv(t, func(c *operator.Config) { c.MaxBody = 1 << 20 })
	alice := ids.New("alice")
	s := e.create(alice)
	turn, stream := e.startTurn(s.ID)
	writeStream(t, e, s.ID, stream, streams.Open, chunk0)
	ap := e.suspendForApproval(s.ID, turn)
	before, err := json.Marshal(e.facts(s.ID))
	if err != nil {
		t.Fatal(err)
	}

	sess := "/sessions/" + s.ID
	huge := strings.Repeat("x", operator.DefaultMaxBody)
	cases := []struct {
		name   string
		r      req
		big    bool
		status int
		msg    string // the error message contains this
	}{
		// POST /sessions
		{"create: malformed JSON", req{method: "POST", path: "/sessions", body: `{"agent":`}, false, 400, "malformed JSON"},
		{"create: broken JSON", req{method: "POST", path: "/sessions", body: `{"agent" "demo"}`}, false, 400, "malformed JSON"},
		{"create: not JSON", req{method: "POST", path: "/sessions", body: `agent=demo`}, false, 400, "JSON object"},
		{"create: unknown field", req{method: "POST", path: "/sessions", body: `{"agent":"demo","model":"gpt"}`}, false, 400, `unknown field "model"`},
		{"create: trailing garbage", req{method: "POST", path: "/sessions", body: `{"agent":"demo"} x`}, false, 400, "after the JSON object"},
		{"create: two objects", req{method: "POST", path: "/sessions", body: `{"agent":"demo"}{"agent":"demo"}`}, false, 400, "after the JSON object"},
		{"create: array", req{method: "POST", path: "/sessions", body: `[{"agent":"demo"}]`}, false, 400, "JSON object"},
		{"create: null", req{method: "POST", path: "/sessions", body: `null`}, false, 400, "JSON object"},
		{"create: agent not a string", req{method: "POST", path: "/sessions", body: `{"agent":5}`}, false, 400, `field "agent"`},
		{"create: empty agent", req{method: "POST", path: "/sessions", body: `{"agent":""}`}, false, 400, "agent is required"},
		{"create: no agent", req{method: "POST", path: "/sessions", body: `{}`}, false, 400, "agent is required"},
		{"create: unknown agent", req{method: "POST", path: "/sessions", body: `{"agent":"nope"}`}, false, 422, `unknown agent "nope"`},
		{"create: text/plain", req{method: "POST", path: "/sessions", body: `{"agent":"demo"}`, contentType: "text/plain"}, false, 415, "application/json"},
		{"create: no Content-Type", req{method: "POST", path: "/sessions", body: `{"agent":"demo"}`, contentType: "-"}, false, 415, "application/json"},
		{"create: form", req{method: "POST", path: "/sessions", body: `agent=demo`, contentType: "application/x-www-form-urlencoded"}, false, 415, "application/json"},
		{"create: latin-1", req{method: "POST", path: "/sessions", body: `{"agent":"demo"}`, contentType: "application/json; charset=iso-8859-1"}, false, 415, "UTF-8"},
		{"create: empty body", req{method: "POST", path: "/sessions", contentType: "application/json"}, false, 400, "required"},
		{"create: no body", req{method: "POST", path: "/sessions"}, false, 400, "required"},
		{"create: oversized", req{method: "POST", path: "/sessions", body: `{"agent":"` + huge + `"}`}, false, 413, "larger than 1048576 bytes"},
		{"create: invalid UTF-8", req{method: "POST", path: "/sessions", body: "{\"agent\":\"d\xffmo\"}"}, false, 400, "UTF-8"},

		// POST /sessions/{id}/messages
		{"message: empty text", req{method: "POST", path: sess + "/messages", body: `{"text":""}`}, false, 400, "text is required"},
		{"message: blank text", req{method: "POST", path: sess + "/messages", body: `{"text":" \n\t "}`}, false, 400, "text is required"},
		{"message: no text", req{method: "POST", path: sess + "/messages", body: `{}`}, false, 400, "text is required"},
		{"message: text not a string", req{method: "POST", path: sess + "/messages", body: `{"text":["hi"]}`}, false, 400, `field "text"`},
		{"message: unknown field", req{method: "POST", path: sess + "/messages", body: `{"text":"hi","role":"system"}`}, false, 400, `unknown field "role"`},
		{"message: trailing garbage", req{method: "POST", path: sess + "/messages", body: `{"text":"hi"},`}, false, 400, "after the JSON object"},
		{"message: malformed", req{method: "POST", path: sess + "/messages", body: `{"text":"hi}`}, false, 400, "malformed JSON"},
		{"message: body over the limit", req{method: "POST", path: sess + "/messages", body: `{"text":"` + huge + `"}`}, false, 413, "larger than"},
		{"message: text over 100 KiB", req{method: "POST", path: sess + "/messages", body: `{"text":"` + strings.Repeat("y", operator.MaxText+1) + `"}`}, true, 400, "longer than the 102400 allowed"},
		{"message: wrong Content-Type", req{method: "POST", path: sess + "/messages", body: `{"text":"hi"}`, contentType: "text/plain"}, false, 415, "application/json"},
		{"message: unknown session", req{method: "POST", path: "/sessions/" + ids.New("s") + "/messages", body: `{"text":"hi"}`}, false, 404, "session not found"},

		// POST /sessions/{id}/approvals/{approvalId}
		{"answer: bad decision", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"maybe"}`}, false, 400, `unknown decision "maybe"`},
		{"answer: shouted decision", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"APPROVE"}`}, false, 400, "a decision is approve, deny, edit"},
		{"answer: no decision", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"reason":"ok"}`}, false, 400, `unknown decision ""`},
		{"answer: edit without input", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"edit"}`}, false, 400, "an edit's input must be a JSON object"},
		{"answer: edit with an array", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"edit","input":[1]}`}, false, 400, "an edit's input must be a JSON object"},
		{"answer: edit with null", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"edit","input":null}`}, false, 400, "an edit's input must be a JSON object"},
		{"answer: edit with output", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"edit","input":{},"output":"x"}`}, false, 400, "an edit carries input, not output"},
		{"answer: respond without output", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"respond"}`}, false, 400, "a response's output must be JSON"},
		{"answer: respond with input", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"respond","input":{},"output":1}`}, false, 400, "a response carries output, not input"},
		{"answer: approve with input", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"approve","input":{"to":"x"}}`}, false, 400, `decision "approve" carries no input or output`},
		{"answer: reason too long", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"approve","reason":"` + strings.Repeat("r", operator.MaxReason+1) + `"}`}, false, 400, "reason is"},
		{"answer: unknown field", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"approve","approved":true}`}, false, 400, `unknown field "approved"`},
		{"answer: wrong Content-Type", req{method: "POST", path: sess + "/approvals/" + ap.ID, body: `{"decision":"approve"}`, contentType: "text/json"}, false, 415, "application/json"},
		{"answer: no body", req{method: "POST", path: sess + "/approvals/" + ap.ID}, false, 400, "required"},
		{"answer: unknown session", req{method: "POST", path: "/sessions/" + ids.New("s") + "/approvals/" + ap.ID, body: `{"decision":"approve"}`}, false, 404, "session not found"},

		// POST /sessions/{id}/cancel
		{"cancel: trailing garbage", req{method: "POST", path: sess + "/cancel", body: `{"reason":"x"} {}`}, false, 400, "after the JSON object"},
		{"cancel: unknown field", req{method: "POST", path: sess + "/cancel", body: `{"why":"x"}`}, false, 400, `unknown field "why"`},
		{"cancel: wrong Content-Type", req{method: "POST", path: sess + "/cancel", body: `{"reason":"x"}`, contentType: "text/plain"}, false, 415, "application/json"},
		{"cancel: reason too long", req{method: "POST", path: sess + "/cancel", body: `{"reason":"` + strings.Repeat("r", operator.MaxReason+1) + `"}`}, false, 400, "reason is"},
		{"cancel: not an object", req{method: "POST", path: sess + "/cancel", body: `"stop"`}, false, 400, "JSON object"},

		// POST /sessions/{id}/executions/{executionId}
		{"verdict: bad verdict", req{method: "POST", path: sess + "/executions/ex_1", body: `{"verdict":"retry"}`}, false, 400, `verdict must be "rerun" or "abandon"`},
		{"verdict: no verdict", req{method: "POST", path: sess + "/executions/ex_1", body: `{}`}, false, 400, "verdict must be"},

		// GET /sessions/{id}/facts
		{"facts: negative after", req{method: "GET", path: sess + "/facts?after=-1"}, false, 400, "after must be"},
		{"facts: after not a number", req{method: "GET", path: sess + "/facts?after=abc"}, false, 400, "after must be"},
		{"facts: fractional after", req{method: "GET", path: sess + "/facts?after=1.5"}, false, 400, "after must be"},

		// GET /sessions/{id}/turns/{turn}/stream
		{"stream: malformed cursor", req{method: "GET", path: sess + "/turns/" + turn + "/stream?after=garbage"}, false, 400, "cursor"},
		{"stream: leading zero", req{method: "GET", path: sess + "/turns/" + turn + "/stream?after=00.1"}, false, 400, "cursor"},
		{"stream: no such chunk", req{method: "GET", path: sess + "/turns/" + turn + "/stream?after=9.9"}, false, 400, "names no part"},
		{"stream: no such part", req{method: "GET", path: sess + "/turns/" + turn + "/stream?after=0.99"}, false, 400, "names no part"},
		{"stream: bad Last-Event-ID", req{method: "GET", path: sess + "/turns/" + turn + "/stream", header: map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "x.y"}}, false, 400, "cursor"},
		{"stream: unknown turn", req{method: "GET", path: sess + "/turns/turn_nope/stream"}, false, 404, "turn not found"},

		// GET /sessions
		{"list: zero limit", req{method: "GET", path: "/sessions?limit=0"}, false, 400, "limit must be"},
		{"list: huge limit", req{method: "GET", path: "/sessions?limit=100000"}, false, 400, "limit must be"},
		{"list: limit not a number", req{method: "GET", path: "/sessions?limit=ten"}, false, 400, "limit must be"},
		{"list: garbage cursor", req{method: "GET", path: "/sessions?cursor=%25%25"}, false, 400, "cursor"},
		{"list: forged cursor", req{method: "GET", path: "/sessions?cursor=eyJwayI6eyJTIjoieCJ9fQ"}, false, 400, "cursor"},

		// Routing.
		{"unknown route", req{method: "GET", path: "/nope"}, false, 404, "no such route"},
		{"unknown sub-route", req{method: "GET", path: sess + "/turns"}, false, 404, "no such route"},
		{"trailing slash", req{method: "GET", path: "/sessions/"}, false, 404, "no such route"},
		{"wrong method on a session", req{method: "PATCH", path: sess}, false, 405, "not allowed"},
		{"delete with an open turn", req{method: "DELETE", path: sess}, false, 409, "open turn"},
		{"wrong method on messages", req{method: "GET", path: sess + "/messages"}, false, 405, "not allowed"},
		{"wrong method on sessions", req{method: "PUT", path: "/sessions", body: `{"agent":"demo"}`}, false, 405, "not allowed"},
		{"unknown session", req{method: "GET", path: "/sessions/" + ids.New("s")}, false, 404, "session not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			user := alice
			if c.r.path == "/sessions" || strings.HasPrefix(c.r.path, "/sessions?") {
				user = ids.New("fresh") // so a session created by mistake shows
			}
			c.r.user = user
			env := e
			if c.big {
				env = big
			}
			got := env.do(c.r)
			if got.status != c.status {
				t.Errorf("status %d, want %d; body %s", got.status, c.status, got.body)
			}
			if msg := got.errorMessage(t); !strings.Contains(msg, c.msg) {
				t.Errorf("error %q, want it to say %q", msg, c.msg)
			}
			if c.status == http.StatusMethodNotAllowed && got.header.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
			after, err := json.Marshal(e.facts(s.ID))
			if err != nil {
				t.Fatal(err)
			}
			if string(after) != string(before) {
				t.Fatalf("facts changed:\n got %s\nwant %s", after, before)
			}
			if user != alice {
				var list api.List
				e.must(http.StatusOK, req{method: "GET", path: "/sessions", user: user}).json(t, &list)
				if len(list.Sessions) != 0 {
					t.Errorf("a refused request created %+v", list.Sessions)
				}
			}
		})
	}
	if ws := e.wakes(); len(ws) != 0 {
		t.Errorf("refused requests sent wakes %+v", ws)
	}
	// The session is just as it was: the approval is still pending.
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: sess, user: alice}).json(t, &got)
	if len(got.Pending) != 1 || got.Pending[0].ApprovalID != ap.ID || got.Inbox != 0 {
		t.Errorf("session after refused requests: %+v", got)
	}
}
