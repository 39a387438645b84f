package operator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/lambdahttp"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

func TestCreateGetAndListOwnSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice, bob := ids.New("alice"), ids.New("bob")

	resp := e.must(http.StatusCreated, req{method: "POST", path: "/sessions", user: alice, body: `{"agent":"demo"}`})
	var first api.Session
	resp.json(t, &first)
	if !strings.HasPrefix(first.ID, "s_") || first.Agent != "demo" || first.Status != reducer.Idle ||
		first.LastSeq != 1 || first.Turn != nil || first.Pending == nil || len(first.Pending) != 0 {
		t.Errorf("created session %+v", first)
	}
	if loc := resp.header.Get("Location"); loc != "/sessions/"+first.ID {
		t.Errorf("Location %q", loc)
	}
	fs := e.facts(first.ID)
	if len(fs) != 1 || fs[0].Type != reducer.SessionCreated || fs[0].Owner != alice ||
		fs[0].Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: alice}) {
		t.Errorf("facts after create: %+v", fs)
	}
	e.wait(2 * time.Millisecond) // distinct creation times order the listing
	second := e.create(alice)
	theirs := e.create(bob)

	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + first.ID, user: alice}).json(t, &got)
	if got.ID != first.ID || got.Status != reducer.Idle || got.Agent != "demo" || !got.Created.Equal(first.Created) {
		t.Errorf("GET: %+v, want %+v", got, first)
	}

	var all api.List
	e.must(http.StatusOK, req{method: "GET", path: "/sessions", user: alice}).json(t, &all)
	var listed []string
	for _, s := range all.Sessions {
		listed = append(listed, s.ID)
	}
	if !slices.Equal(listed, []string{second.ID, first.ID}) || all.Next != "" {
		t.Errorf("alice lists %v (next %q), want her own two, newest first", listed, all.Next)
	}
	if all.Sessions[0].Agent != "demo" || all.Sessions[0].Status != reducer.Idle || all.Sessions[0].LastSeq != 1 {
		t.Errorf("summary %+v", all.Sessions[0])
	}

	// Paging: one at a time, with the cursor.
	var p1, p2 api.List
	e.must(http.StatusOK, req{method: "GET", path: "/sessions?limit=1", user: alice}).json(t, &p1)
	if len(p1.Sessions) != 1 || p1.Sessions[0].ID != second.ID || p1.Next == "" {
		t.Fatalf("page 1: %+v", p1)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/sessions?limit=1&cursor=" + p1.Next, user: alice}).json(t, &p2)
	if len(p2.Sessions) != 1 || p2.Sessions[0].ID != first.ID {
		t.Fatalf("page 2: %+v", p2)
	}

	var bobs api.List
	e.must(http.StatusOK, req{method: "GET", path: "/sessions", user: bob}).json(t, &bobs)
	if len(bobs.Sessions) != 1 || bobs.Sessions[0].ID != theirs.ID {
		t.Errorf("bob lists %+v, want only his own", bobs.Sessions)
	}
	var nobody api.List
	e.must(http.StatusOK, req{method: "GET", path: "/sessions", user: ids.New("carol")}).json(t, &nobody)
	if nobody.Sessions == nil || len(nobody.Sessions) != 0 {
		t.Errorf("a caller without sessions gets %+v", nobody.Sessions)
	}
}

func TestGetShowsPendingApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, stream := e.startTurn(s.ID)
	ap := e.suspendForApproval(s.ID, turn)
	e.append(s.ID, reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: alice},
		Message: &reducer.Message{ID: ids.New("msg"), Text: "also this"}})

	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Status != reducer.Suspended || got.LastSeq != 6 || got.Inbox != 1 || got.Uncertain != nil {
		t.Errorf("session %+v", got)
	}
	if got.Turn == nil || got.Turn.ID != turn || got.Turn.Stream != stream || got.Turn.Cause != reducer.CauseApproval ||
		got.Turn.Since.IsZero() || !got.Turn.Lease.IsZero() || got.Turn.Invocations != 1 {
		t.Errorf("turn %+v", got.Turn)
	}
	want := []api.Approval{{ApprovalID: ap.ID, ToolCallID: ap.ToolCallID, Tool: "deploy",
		Input: json.RawMessage(`{"env":"prod"}`), Expires: ap.Expires}}
	if len(got.Pending) != 1 || got.Pending[0].ApprovalID != want[0].ApprovalID ||
		got.Pending[0].ToolCallID != want[0].ToolCallID || got.Pending[0].Tool != "deploy" ||
		string(got.Pending[0].Input) != `{"env":"prod"}` || !got.Pending[0].Expires.Equal(ap.Expires) {
		t.Errorf("pending %+v, want %+v", got.Pending, want)
	}
	// The wire names are the documented ones.
	raw := e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).body
	for _, key := range []string{`"approvalId":"` + ap.ID + `"`, `"toolCallId":`, `"lastSeq":6`, `"inbox":1`, `"cause":"approval"`, `"usage":{`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("GET body lacks %s: %s", key, raw)
		}
	}
}

func TestGetShowsUncertainExecution(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	ex := e.suspendUncertain(s.ID, turn)
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Uncertain == nil || *got.Uncertain != (api.Execution{ExecutionID: ex.ID, ToolCallID: ex.ToolCallID, Tool: "charge", Attempt: 1}) ||
		got.Turn == nil || got.Turn.Cause != reducer.CauseUncertain {
		t.Errorf("uncertain %+v turn %+v", got.Uncertain, got.Turn)
	}
}

func TestPostMessageRecordsFactAndWakes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	text := "Please deploy ☕ to staging"
	var acc api.MessageAccepted
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice,
		body: `{"text":"` + text + `"}`, contentType: "application/json; charset=UTF-8"}).json(t, &acc)
	if !strings.HasPrefix(acc.MessageID, "msg_") {
		t.Fatalf("message id %q", acc.MessageID)
	}
	fs := e.facts(s.ID)
	last := fs[len(fs)-1]
	if len(fs) != 2 || last.Type != reducer.MessageReceived || last.Message == nil ||
		!reflect.DeepEqual(*last.Message, reducer.Message{ID: acc.MessageID, Text: text, Delivery: reducer.SteerEnqueue}) ||
		last.Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: alice}) {
		t.Errorf("facts %+v", fs)
	}
	ws := e.wakes()
	if len(ws) != 1 || ws[0].Session != s.ID || ws[0].Reason != "message" || ws[0].Seq != 2 {
		t.Errorf("wakes %+v, want one for the message", ws)
	}
}

func TestFactsAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	e.suspendForApproval(s.ID, turn) // seq 1..5

	seqs := func(path string) []int64 {
		t.Helper()
		var out api.Facts
		e.must(http.StatusOK, req{method: "GET", path: path, user: alice}).json(t, &out)
		if out.Facts == nil {
			t.Fatalf("%s: facts is null, want a list", path)
		}
		var n []int64
		for _, f := range out.Facts {
			n = append(n, f.Seq)
		}
		return n
	}
	if got := seqs("/sessions/" + s.ID + "/facts"); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("all facts: seqs %v", got)
	}
	if got := seqs("/sessions/" + s.ID + "/facts?after=3"); !slices.Equal(got, []int64{4, 5}) {
		t.Errorf("after=3: seqs %v", got)
	}
	if got := seqs("/sessions/" + s.ID + "/facts?after=5"); len(got) != 0 {
		t.Errorf("after=5: seqs %v", got)
	}
	var out api.Facts
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/facts?after=3", user: alice}).json(t, &out)
	if out.Facts[0].Type != reducer.ApprovalRequested || out.Facts[0].Approval == nil || out.Facts[1].Cause != reducer.CauseApproval {
		t.Errorf("facts 4, 5: %+v", out.Facts)
	}
}

// writeStream writes parts as chunks: each inner slice is one flush.
func writeStream(t *testing.T, e *env, id, stream string, close streams.Status, chunks ...[]parts.Part) *streams.Sink {
	t.Helper()
	k := e.store.OpenStream(id, stream)
	for _, c := range chunks {
		if err := k.Append(c...); err != nil {
			t.Fatal(err)
		}
		if err := k.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if close != streams.Open {
		if err := k.Close(t.Context(), close); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

var (
	chunk0 = []parts.Part{{Type: parts.Start, MessageID: "m"}, {Type: parts.StartStep},
		{Type: parts.TextStart, ID: "t1"}, {Type: parts.TextDelta, ID: "t1", Delta: "Hello"}}
	chunk1 = []parts.Part{{Type: parts.TextEnd, ID: "t1"}, {Type: parts.FinishStep}}
	closer = []parts.Part{{Type: parts.Finish, FinishReason: "stop"}}
)

func TestStreamJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, stream := e.startTurn(s.ID)
	k := writeStream(t, e, s.ID, stream, streams.Open, chunk0, chunk1)
	path := "/sessions/" + s.ID + "/turns/" + turn + "/stream"

	var page api.StreamPage
	e.must(http.StatusOK, req{method: "GET", path: path, user: alice}).json(t, &page)
	var cursors []streams.Cursor
	for _, p := range page.Parts {
		cursors = append(cursors, streams.Cursor(p.Cursor))
	}
	if !slices.Equal(cursors, []streams.Cursor{"0.0", "0.1", "0.2", "0.3", "1.0", "1.1"}) ||
		page.Cursor != "1.1" || page.Closed != "" || page.Parts[3].Part.Delta != "Hello" {
		t.Fatalf("page %+v", page)
	}
	raw := e.must(http.StatusOK, req{method: "GET", path: path, user: alice}).body
	if !strings.Contains(string(raw), `"closed":""`) || !strings.Contains(string(raw), `{"cursor":"0.0","part":{"type":"start","messageId":"m"}}`) {
		t.Errorf("wire shape: %s", raw)
	}

	// Resume after a cursor; the stream id names the turn too.
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/turns/" + stream + "/stream?after=0.3", user: alice}).json(t, &page)
	if len(page.Parts) != 2 || page.Parts[0].Cursor != "1.0" || page.Cursor != "1.1" {
		t.Errorf("after 0.3: %+v", page)
	}
	// Nothing new: the cursor stays.
	e.must(http.StatusOK, req{method: "GET", path: path + "?after=1.1", user: alice}).json(t, &page)
	if len(page.Parts) != 0 || page.Parts == nil || page.Cursor != "1.1" || page.Closed != "" {
		t.Errorf("after 1.1: %+v", page)
	}

	if err := k.Append(closer...); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(t.Context(), streams.Completed); err != nil {
		t.Fatal(err)
	}
	e.must(http.StatusOK, req{method: "GET", path: path + "?after=1.1", user: alice}).json(t, &page)
	if len(page.Parts) != 1 || page.Parts[0].Part.Type != parts.Finish || streams.Status(page.Closed) != streams.Completed {
		t.Errorf("closed: %+v", page)
	}

	// A turn the session does not have.
	if msg := e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + s.ID + "/turns/" + ids.New("turn") + "/stream", user: alice}).errorMessage(t); msg != "turn not found" {
		t.Errorf("unknown turn: %q", msg)
	}
	// Another session's turn, even of the same caller.
	other := e.create(alice)
	e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + other.ID + "/turns/" + turn + "/stream", user: alice})
}

func TestStreamJSONHoldsForNewParts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *operator.Config) { c.StreamHold = 5 * time.Second })
	alice := ids.New("alice")
	s := e.create(alice)
	turn, stream := e.startTurn(s.ID)
	k := writeStream(t, e, s.ID, stream, streams.Open, chunk0)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = k.Append(chunk1...)
		_ = k.Flush(context.Background())
	}()
	start := time.Now()
	var page api.StreamPage
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/turns/" + turn + "/stream?after=0.3", user: alice}).json(t, &page)
	if len(page.Parts) != 2 || page.Parts[0].Cursor != "1.0" {
		t.Errorf("held read: %+v", page)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("held read answered after %v; it should answer when parts arrive", d)
	}
}

func TestStreamSSE(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, stream := e.startTurn(s.ID)
	k := writeStream(t, e, s.ID, stream, streams.Open, chunk0, chunk1)
	path := "/sessions/" + s.ID + "/turns/" + turn + "/stream"
	sse := map[string]string{"Accept": "text/event-stream"}

	resp := e.must(http.StatusOK, req{method: "GET", path: path, user: alice, header: sse})
	if ct := resp.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	if v := resp.header.Get("X-Vercel-Ai-Ui-Message-Stream"); v != "v1" {
		t.Errorf("UI message stream header %q", v)
	}
	evs := parseEvents(t, resp.body)
	if len(evs) != 6 {
		t.Fatalf("open stream: %d events %+v", len(evs), evs)
	}
	for i, ev := range evs {
		var p parts.Part
		if err := json.Unmarshal([]byte(ev.data), &p); err != nil || ev.name != "" {
			t.Fatalf("event %d %+v: %v", i, ev, err)
		}
		if want := append(slices.Clone(chunk0), chunk1...)[i]; p.Type != want.Type || p.Delta != want.Delta {
			t.Errorf("event %d: part %+v, want %+v", i, p, want)
		}
	}
	if evs[0].id != "0.0" || evs[5].id != "1.1" {
		t.Errorf("event ids %q..%q", evs[0].id, evs[5].id)
	}
	if strings.Contains(string(resp.body), "[DONE]") {
		t.Error("an open stream's events end with [DONE]")
	}

	if err := k.Append(closer...); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(t.Context(), streams.Completed); err != nil {
		t.Fatal(err)
	}
	// Reconnect with Last-Event-ID: only what follows, then the close.
	evs = parseEvents(t, e.must(http.StatusOK, req{method: "GET", path: path, user: alice,
		header: map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "1.1"}}).body)
	if len(evs) != 2 || evs[0].id != "2.0" || !strings.Contains(evs[0].data, `"type":"finish"`) ||
		evs[1] != (event{name: "close", data: "[DONE]"}) {
		t.Errorf("resumed events %+v", evs)
	}
	// ?after works for SSE too; Last-Event-ID wins over it.
	evs = parseEvents(t, e.must(http.StatusOK, req{method: "GET", path: path + "?after=0.0", user: alice,
		header: map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "2.0"}}).body)
	if len(evs) != 1 || evs[0].name != "close" {
		t.Errorf("Last-Event-ID 2.0: %+v", evs)
	}
	evs = parseEvents(t, e.must(http.StatusOK, req{method: "GET", path: path + "?after=1.0", user: alice,
		header: map[string]string{"Accept": "text/html, text/event-stream;q=0.9"}}).body)
	if len(evs) != 3 || evs[0].id != "1.1" || evs[2].data != "[DONE]" {
		t.Errorf("after=1.0: %+v", evs)
	}
}

func TestStreamSSEFollowsALiveTurn(t *testing.T) {
	t.Parallel()
	hold := 5 * time.Second
	e := newEnv(t, func(c *operator.Config) { c.StreamHold = hold })
	alice := ids.New("alice")
	s := e.create(alice)
	turn, stream := e.startTurn(s.ID)
	k := writeStream(t, e, s.ID, stream, streams.Open, chunk0)
	done := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		ctx := context.Background()
		err := k.Append(chunk1...)
		if err == nil {
			err = k.Flush(ctx)
		}
		time.Sleep(300 * time.Millisecond)
		if err == nil {
			err = k.Append(closer...)
		}
		if err == nil {
			err = k.Close(ctx, streams.Completed)
		}
		done <- err
	}()
	start := time.Now()
	evs := parseEvents(t, e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/turns/" + turn + "/stream",
		user: alice, header: map[string]string{"Accept": "text/event-stream"}}).body)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range evs {
		ids = append(ids, ev.id)
	}
	if !slices.Equal(ids, []string{"0.0", "0.1", "0.2", "0.3", "1.0", "1.1", "2.0", ""}) || evs[7].name != "close" {
		t.Errorf("live events %+v", evs)
	}
	if d := time.Since(start); d >= hold {
		t.Errorf("took %v: a closed stream should end the response at once", d)
	}

	// An open stream with nothing new ends the response at the hold.
	e2 := newEnv(t, func(c *operator.Config) { c.StreamHold = 500 * time.Millisecond })
	s2 := e2.create(alice)
	turn2, stream2 := e2.startTurn(s2.ID)
	writeStream(t, e2, s2.ID, stream2, streams.Open, chunk0)
	start = time.Now()
	evs = parseEvents(t, e2.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s2.ID + "/turns/" + turn2 + "/stream",
		user: alice, header: map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "0.3"}}).body)
	if d := time.Since(start); len(evs) != 0 || d < 400*time.Millisecond || d > 3*time.Second {
		t.Errorf("idle open stream: %d events after %v, want none after the 500ms hold", len(evs), d)
	}
}

func TestApproveThenConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	ap := e.suspendForApproval(s.ID, turn)
	path := "/sessions/" + s.ID + "/approvals/" + ap.ID

	e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice, body: `{"decision":"approve","reason":"looks fine"}`})
	fs := e.facts(s.ID)
	last := fs[len(fs)-1]
	if len(fs) != 6 || last.Type != reducer.ApprovalAnswered || last.Answer == nil ||
		!reflect.DeepEqual(*last.Answer, reducer.Answer{ApprovalID: ap.ID, ToolCallID: ap.ToolCallID, Decision: reducer.Approve, Reason: "looks fine"}) ||
		last.Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: alice}) {
		t.Errorf("facts %+v", fs)
	}
	if ws := e.wakes(); len(ws) != 1 || ws[0].Session != s.ID || ws[0].Reason != "approval" {
		t.Errorf("wakes %+v, want one for the answer", ws)
	}

	msg := e.must(http.StatusConflict, req{method: "POST", path: path, user: alice, body: `{"decision":"deny"}`}).errorMessage(t)
	if !strings.Contains(msg, "not pending") {
		t.Errorf("second answer: %q", msg)
	}
	e.must(http.StatusConflict, req{method: "POST", path: "/sessions/" + s.ID + "/approvals/" + ids.New("ap"), user: alice, body: `{"decision":"deny"}`})
	if n := len(e.facts(s.ID)); n != 6 {
		t.Errorf("%d facts after refused answers, want 6", n)
	}
}

func TestDenyWithoutReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	ap := e.suspendForApproval(s.ID, turn)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/approvals/" + ap.ID, user: alice, body: `{"decision":"deny"}`})
	if st := e.state(s.ID); len(st.Turn.Answers) != 1 || st.Turn.Answers[0].Decision != reducer.Deny {
		t.Errorf("answers %+v", st.Turn.Answers)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, stream := e.startTurn(s.ID)
	writeStream(t, e, s.ID, stream, streams.Open, chunk0)
	path := "/sessions/" + s.ID + "/cancel"

	e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice, body: `{"reason":"wrong branch"}`})
	fs := e.facts(s.ID)
	last := fs[len(fs)-1]
	if last.Type != reducer.TurnCancelled || last.Turn != turn || last.Reason != "wrong branch" ||
		last.Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: alice}) {
		t.Errorf("last fact %+v", last)
	}
	if st := e.state(s.ID); st.Status != reducer.Idle || st.Turn != nil {
		t.Errorf("state after cancel %+v", st)
	}
	page, err := e.store.ReadStream(t.Context(), s.ID, stream, "")
	if err != nil || page.Closed != streams.Cancelled {
		t.Errorf("stream after cancel: closed %q, err %v", page.Closed, err)
	}
	n := len(fs)
	msg := e.must(http.StatusConflict, req{method: "POST", path: path, user: alice}).errorMessage(t)
	if !strings.Contains(msg, "no open turn") || len(e.facts(s.ID)) != n {
		t.Errorf("second cancel: %q", msg)
	}

	// The body is optional.
	turn2, _ := e.startTurn(s.ID)
	e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice})
	if fs := e.facts(s.ID); fs[len(fs)-1].Type != reducer.TurnCancelled || fs[len(fs)-1].Turn != turn2 {
		t.Errorf("cancel without a body: last fact %+v", fs[len(fs)-1])
	}
}

func TestVerdict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	ex := e.suspendUncertain(s.ID, turn)
	path := "/sessions/" + s.ID + "/executions/" + ex.ID

	e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice, body: `{"verdict":"abandon"}`})
	fs := e.facts(s.ID)
	last := fs[len(fs)-1]
	if last.Type != reducer.ExecutionVerdict || last.Settled == nil || last.Settled.ExecutionID != ex.ID ||
		last.Settled.Verdict != reducer.Abandon {
		t.Errorf("last fact %+v", last)
	}
	if ws := e.wakes(); len(ws) != 1 || ws[0].Reason != "verdict" {
		t.Errorf("wakes %+v", ws)
	}
	e.must(http.StatusConflict, req{method: "POST", path: path, user: alice, body: `{"verdict":"rerun"}`})
	if len(e.facts(s.ID)) != len(fs) {
		t.Error("a refused verdict wrote a fact")
	}
}

// A rerun that became uncertain in turn is shown as its call's next
// attempt, under its own id; the first execution's id settles nothing.
func TestVerdictOnARerun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	first := e.suspendUncertain(s.ID, turn)
	firstPath := "/sessions/" + s.ID + "/executions/" + first.ID
	e.must(http.StatusAccepted, req{method: "POST", path: firstPath, user: alice, body: `{"verdict":"rerun"}`})
	second := first.Next()
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	e.append(s.ID,
		reducer.Fact{Type: reducer.TurnResumed, Actor: agent, Turn: turn, Lease: time.Now().Add(10 * time.Minute)},
		reducer.Fact{Type: reducer.ExecutionStarted, Actor: agent, Turn: turn, Execution: &second},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseUncertain, Execution: &second},
	)

	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	want := api.Execution{ExecutionID: second.ID, ToolCallID: first.ToolCallID, Tool: "charge", Attempt: 2}
	if got.Uncertain == nil || *got.Uncertain != want || second.ID == first.ID {
		t.Fatalf("uncertain %+v, want %+v", got.Uncertain, want)
	}
	before := e.facts(s.ID)
	e.must(http.StatusConflict, req{method: "POST", path: firstPath, user: alice, body: `{"verdict":"rerun"}`})
	if len(e.facts(s.ID)) != len(before) {
		t.Fatal("a verdict on the first execution wrote a fact")
	}
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/executions/" + second.ID, user: alice, body: `{"verdict":"abandon"}`})
}

// TestOtherCallerSeesNothing: bob gets the same 404 for alice's session as
// for one that does not exist, on every route, and writes nothing.
func TestOtherCallerSeesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice, bob := ids.New("alice"), ids.New("bob")
	s := e.create(alice)
	turn, stream := e.startTurn(s.ID)
	writeStream(t, e, s.ID, stream, streams.Open, chunk0)
	ap := e.suspendForApproval(s.ID, turn)
	u := e.create(alice)
	uturn, _ := e.startTurn(u.ID)
	ex := e.suspendUncertain(u.ID, uturn)
	before, ubefore := e.facts(s.ID), e.facts(u.ID)
	missing := ids.New("s")

	routes := func(id, ex string) []req {
		return []req{
			{method: "GET", path: "/sessions/" + id},
			{method: "GET", path: "/sessions/" + id + "/facts"},
			{method: "GET", path: "/sessions/" + id + "/facts?after=1"},
			{method: "GET", path: "/sessions/" + id + "/turns/" + turn + "/stream"},
			{method: "GET", path: "/sessions/" + id + "/turns/" + turn + "/stream", header: map[string]string{"Accept": "text/event-stream"}},
			{method: "POST", path: "/sessions/" + id + "/messages", body: `{"text":"hi"}`},
			{method: "POST", path: "/sessions/" + id + "/approvals/" + ap.ID, body: `{"decision":"approve"}`},
			{method: "POST", path: "/sessions/" + id + "/cancel"},
			{method: "POST", path: "/sessions/" + id + "/cancel", body: `{"reason":"mine now"}`},
			{method: "POST", path: "/sessions/" + id + "/executions/" + ex, body: `{"verdict":"rerun"}`},
			// Bad input on someone else's session is still not found.
			{method: "POST", path: "/sessions/" + id + "/messages", body: `{"text":""}`},
			{method: "POST", path: "/sessions/" + id + "/approvals/" + ap.ID, body: `{"decision":"maybe"}`},
			{method: "GET", path: "/sessions/" + id + "/facts?after=-1"},
		}
	}
	for _, sid := range []string{s.ID, u.ID, missing} {
		want := routes(missing, ex.ID)
		for i, r := range routes(sid, ex.ID) {
			r.user = bob
			got := e.do(r)
			w := want[i]
			w.user = bob
			ref := e.do(w)
			if got.status != http.StatusNotFound || string(got.body) != string(ref.body) {
				t.Errorf("bob %s %s: %d %s; want 404 %s like a missing session", r.method, r.path, got.status, got.body, ref.body)
			}
			if got.status == http.StatusNotFound {
				got.errorMessage(t)
			}
		}
	}
	if after := e.facts(s.ID); len(after) != len(before) {
		t.Errorf("alice's session went from %d to %d facts", len(before), len(after))
	}
	if after := e.facts(u.ID); len(after) != len(ubefore) {
		t.Errorf("alice's other session went from %d to %d facts", len(ubefore), len(after))
	}
	if ws := e.wakes(); len(ws) != 0 {
		t.Errorf("bob's requests sent wakes %+v", ws)
	}
	var list api.List
	e.must(http.StatusOK, req{method: "GET", path: "/sessions", user: bob}).json(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("bob lists %+v", list.Sessions)
	}
	// And alice still can.
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice})
}

func TestNoIdentityIs401(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	n := len(e.facts(s.ID))
	for _, r := range []req{
		{method: "POST", path: "/sessions", body: `{"agent":"demo"}`},
		{method: "GET", path: "/sessions"},
		{method: "GET", path: "/sessions/" + s.ID},
		{method: "GET", path: "/sessions/" + s.ID + "/facts"},
		{method: "GET", path: "/sessions/" + s.ID + "/turns/t/stream"},
		{method: "POST", path: "/sessions/" + s.ID + "/messages", body: `{"text":"hi"}`},
		{method: "POST", path: "/sessions/" + s.ID + "/approvals/a", body: `{"decision":"approve"}`},
		{method: "POST", path: "/sessions/" + s.ID + "/cancel"},
		{method: "POST", path: "/sessions/" + s.ID + "/executions/x", body: `{"verdict":"rerun"}`},
	} {
		got := e.do(r)
		if got.status != http.StatusUnauthorized {
			t.Errorf("%s %s without identity: %d %s", r.method, r.path, got.status, got.body)
			continue
		}
		got.errorMessage(t)
	}
	if len(e.facts(s.ID)) != n {
		t.Error("an unauthenticated request wrote a fact")
	}
}

// TestLambdaIdentity runs the API behind lambdahttp, with the JWT subject
// as the identity, the way the Lambda function wires it.
func TestLambdaIdentity(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	h := lambdahttp.Handler(operator.New(operator.Config{Sessions: e.store, Agents: func(n string) bool { return n == "demo" }}),
		lambdahttp.WithContext(func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) context.Context {
			if sub, ok := lambdahttp.Claim(ev, "sub"); ok {
				return operator.WithIdentity(ctx, sub)
			}
			return ctx
		}))
	alice := ids.New("alice")
	event := func(method, path, body string, sub string) events.APIGatewayV2HTTPRequest {
		ev := events.APIGatewayV2HTTPRequest{
			Version: "2.0", RouteKey: method + " " + path, RawPath: path,
			Headers: map[string]string{"content-type": "application/json"}, Body: body,
			RequestContext: events.APIGatewayV2HTTPRequestContext{Stage: "$default",
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1"}},
		}
		if sub != "" {
			ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": sub}}}
		}
		return ev
	}
	resp, err := h(t.Context(), event("POST", "/sessions", `{"agent":"demo"}`, alice))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s %v", resp.StatusCode, resp.Body, err)
	}
	var s api.Session
	if err := json.Unmarshal([]byte(resp.Body), &s); err != nil {
		t.Fatal(err)
	}
	if fs := e.facts(s.ID); fs[0].Owner != alice {
		t.Errorf("owner %q, want the JWT subject %q", fs[0].Owner, alice)
	}
	resp, _ = h(t.Context(), event("GET", "/sessions/"+s.ID, "", alice))
	if resp.StatusCode != http.StatusOK || resp.Headers["Content-Type"] != "application/json" {
		t.Errorf("get: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	resp, _ = h(t.Context(), event("GET", "/sessions/"+s.ID, "", ids.New("bob")))
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("get as another subject: %d", resp.StatusCode)
	}
	resp, _ = h(t.Context(), event("GET", "/sessions/"+s.ID, "", ""))
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("get without a JWT: %d", resp.StatusCode)
	}
}

func TestStoreFailuresAnswer5xx(t *testing.T) {
	t.Parallel()
	e := newEmuEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)

	// A deadline that has passed: 503.
	expired := newEmuEnvWrapped(t, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithDeadline(r.Context(), time.Now().Add(-time.Second))
			defer cancel()
			h.ServeHTTP(w, r.WithContext(ctx))
		})
	})
	got := expired.do(req{method: "GET", path: "/sessions/" + s.ID, user: alice})
	if got.status != http.StatusServiceUnavailable {
		t.Errorf("past deadline: %d %s, want 503", got.status, got.body)
	}
	got.errorMessage(t)

	// A store that fails otherwise: a generic 500 that says nothing of it.
	broken := newEmuEnv(t, func(c *operator.Config) {
		dead := dynamoOn("no-such-table-" + strings.ToLower(ids.New("x")))
		c.Sessions = c.Sessions.Decorate(func(session.FactLog) session.FactLog { return dead }, nil)
	})
	got = broken.do(req{method: "GET", path: "/sessions/" + s.ID, user: alice})
	if got.status != http.StatusInternalServerError || got.errorMessage(t) != "internal error" {
		t.Errorf("broken store: %d %s, want 500 internal error", got.status, got.body)
	}
}
