package operator_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// FuzzHandler sends fuzzed requests (a route, its query, Content-Type and
// body) through the real handler, against the emulator, to a session of
// the caller's that is suspended for an approval and has a stream. Every
// answer is JSON, 2xx or 4xx, never 5xx; a refusal carries an error
// message and leaves the session's facts as they were.
func FuzzHandler(f *testing.F) {
	ctx := context.Background()
	c := shared.Clients()
	store := session.New(dynamo.New(c.DynamoDB, shared.Table), streams.New(c.S3, shared.Bucket))
	h := operator.New(operator.Config{
		Sessions: store,
		Agents:   func(name string) bool { return name == "demo" },
		Identity: func(r *http.Request) (string, bool) { u := r.Header.Get(userHeader); return u, u != "" },
		Log:      slog.New(slog.DiscardHandler),
	})
	user := ids.New("fuzzer")
	id := ids.New("s")
	st, err := store.Create(ctx, id, user, "demo")
	if err != nil {
		f.Fatal(err)
	}
	turn := ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	ap := reducer.Approval{ID: ids.New("ap"), ToolCallID: ids.New("call"), Tool: "deploy", Input: json.RawMessage(`{}`)}
	if _, err := store.Append(ctx, id, st,
		reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: user}, Message: &reducer.Message{ID: ids.New("msg"), Text: "go"}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(time.Hour)},
		reducer.Fact{Type: reducer.ApprovalRequested, Actor: agent, Turn: turn, Approval: &ap},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseApproval},
	); err != nil {
		f.Fatal(err)
	}
	sink := store.OpenStream(id, turn)
	if err := sink.Append(parts.Part{Type: parts.Start, MessageID: turn}, parts.Part{Type: parts.StartStep}); err != nil {
		f.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		f.Fatal(err)
	}

	sess := "/sessions/" + id
	routes := []struct{ method, path string }{
		{"POST", "/sessions"},
		{"POST", sess + "/messages"},
		{"POST", sess + "/approvals/" + ap.ID},
		{"POST", sess + "/cancel"},
		{"POST", sess + "/executions/ex_1"},
		{"GET", sess + "/facts"},
		{"GET", sess + "/turns/" + turn + "/stream"},
		{"GET", "/sessions"},
		{"GET", sess},
	}
	f.Add(uint8(0), "", "application/json", []byte(`{"agent":"nope"}`))
	f.Add(uint8(1), "", "application/json", []byte(`{"text":" "}`))
	f.Add(uint8(1), "", "application/json", []byte(`{"text":"hi"} x`))
	f.Add(uint8(2), "", "application/json", []byte(`{"decision":"maybe"}`))
	f.Add(uint8(3), "", "text/plain", []byte(`{}`))
	f.Add(uint8(4), "", "application/json", []byte(`{"verdict":"rerun"}`))
	f.Add(uint8(5), "after=-1", "", []byte{})
	f.Add(uint8(5), "after=3", "", []byte{})
	f.Add(uint8(6), "after=0.1", "", []byte{})
	f.Add(uint8(6), "after=9.9", "", []byte{})
	f.Add(uint8(7), "limit=0&cursor=%25%25", "", []byte{})
	f.Add(uint8(7), "cursor=eyJwayI6eyJTIjoieCJ9fQ", "", []byte{})
	f.Add(uint8(8), "", "", []byte{})
	f.Fuzz(func(t *testing.T, route uint8, query, ct string, body []byte) {
		rt := routes[int(route)%len(routes)]
		target := rt.path
		if query != "" {
			target += "?" + query
		}
		r, err := http.NewRequestWithContext(t.Context(), rt.method, target, strings.NewReader(string(body)))
		if err != nil {
			return // not a request a server would hand on
		}
		r.Header.Set(userHeader, user)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		before, err := store.Head(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 || w.Code < 200 || (w.Code >= 300 && w.Code < 400) {
			t.Fatalf("%s %s: status %d: %s", rt.method, target, w.Code, w.Body)
		}
		if got := w.Header().Get("Content-Type"); got != "application/json" {
			t.Fatalf("%s %s: Content-Type %q", rt.method, target, got)
		}
		var e api.Error
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %s: answer %q is not JSON: %v", rt.method, target, w.Body, err)
		}
		after, err := store.Head(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if w.Code >= 400 {
			if e.Error == "" {
				t.Fatalf("%s %s: refusal %d without a message: %s", rt.method, target, w.Code, w.Body)
			}
			if after.LastSeq != before.LastSeq {
				t.Fatalf("%s %s: refused with %d, yet the session went from seq %d to %d", rt.method, target, w.Code, before.LastSeq, after.LastSeq)
			}
			return
		}
		if rt.method == "POST" && rt.path != "/sessions" && after.LastSeq == before.LastSeq {
			t.Fatalf("%s %s: accepted with %d, yet nothing was written", rt.method, target, w.Code)
		}
	})
}
