package turntest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	pt "github.com/baton-run/baton/internal/provider/providertest"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// What every provider's server streams, piece by piece, so that each wire
// format splits text, reasoning and tool arguments across events.
var (
	// UserText is the message the turn answers.
	UserText        = "What is the weather in Oslo? Email it to the team."
	reasoningPieces = []string{"The user wants the Oslo weather and an email to the team.", " The two calls are independent; make both now."}
	textPieces      = []string{"I'll check the weather in Oslo", " and email the team."}
	weatherArgs     = []string{`{"city": "Os`, `lo"}`}
	emailArgs       = []string{`{"to": "team@example.com", `, `"subject": "Oslo weather", `, `"body": "Clear in Oslo today."}`}
	finalPieces     = []string{"Oslo is clear at 14°C", "; the email is handled."}
)

func joined(pieces []string) string { return strings.Join(pieces, "") }

// js renders s as a JSON string, for building wire payloads.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// weatherOut is what get_weather returns for Oslo (10 + len("Oslo")%15).
const weatherOut = `{"city":"Oslo","sky":"clear","tempC":14}`

var operator = reducer.Actor{Kind: reducer.ActorOperator, ID: "bob"}

// wire is one provider under test.
type wire struct {
	// replies are the server's streamed replies: step 1 (reasoning where the
	// provider offers it, text, then get_weather and send_email in one step)
	// and step 2 (a final text).
	replies []pt.Reply
	// model builds a new provider instance talking to the server at url.
	model func(t testing.TB, url string) model.Model
	// weatherID and emailID are the call ids the server issues in step 1.
	weatherID, emailID string
	// signature is the reasoning signature step 1 streams, if any.
	signature string
}

// recorder wraps a model. Each time a step is asked of it, it records the
// conversation the runner built and, at that same moment, rebuilds it twice
// from durable state (a fresh session.Store.Load plus a replay of the
// stream) in other fresh invocations.
type recorder struct {
	model.Model
	session string
	seen    [][]byte   // the runner's conversation, per step
	rebuilt [][][]byte // two durable rebuilds, per step
	errs    []error
}

func (r *recorder) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	b, err := json.Marshal(req.Messages)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	r.seen = append(r.seen, b)
	var rb [][]byte
	for range 2 {
		x, err := rebuild(ctx, r.session)
		if err != nil {
			r.errs = append(r.errs, err)
		}
		rb = append(rb, x)
	}
	r.rebuilt = append(r.rebuilt, rb)
	return r.Model.Stream(ctx, req)
}

// rebuild is the open turn's model input as durable state gives it to a
// fresh invocation.
func rebuild(ctx context.Context, id string) ([]byte, error) {
	inv := fresh(nil)
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	tr := sess.State.Turn
	if tr == nil {
		return nil, errors.New("rebuild: no open turn")
	}
	ps, _, err := readParts(ctx, inv, id, tr.Stream)
	if err != nil {
		return nil, err
	}
	return json.Marshal(conversation.Build(sess.History, tr.Messages, conversation.Replay(ps)))
}

// result is a tool result as a provider should see it.
type result struct {
	id    string
	text  string
	error bool
}

// outcome is what a provider test checks on the wire.
type outcome struct {
	session, turn string
	requests      []pt.Request
	// results are the expected tool results after the resume, in call order.
	results []result
}

// runTurn runs one turn on w: Start in invocation A suspends for the
// email's approval after get_weather ran; the operator answers d; Resume in
// a fresh invocation B, with a new provider instance, completes the turn.
// It checks everything that does not depend on the provider's wire format.
func runTurn(t *testing.T, w wire, d reducer.Decision) outcome {
	t.Helper()
	ctx := ctxT(t)
	srv := pt.NewServer(t, w.replies...)

	// Invocation A.
	recA := &recorder{Model: w.model(t, srv.URL)}
	a := fresh(demoAgent(t, recA))
	id := newSession(t, a, UserText)
	recA.session = id
	out, err := a.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Suspended || out.Cause != reducer.CauseApproval || out.Steps != 1 {
		t.Fatalf("Start: %+v, want suspended for approval after 1 step", out)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("invocation A made %d model requests, want 1", n)
	}
	sess, err := a.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.State.Status != reducer.Suspended || len(sess.State.Turn.Pending) != 1 {
		t.Fatalf("state after Start = %+v", sess.State)
	}
	// Baton names the calls; the stream keeps the server's ids for the wire.
	weatherCall, emailCall := turn.CallID(out.Turn, 0, 0), turn.CallID(out.Turn, 0, 1)
	ap := sess.State.Turn.Pending[0]
	if ap.Tool != "send_email" || ap.ToolCallID != emailCall || !sameJSON(t, ap.Input, joined(emailArgs)) {
		t.Fatalf("pending approval = %+v, want send_email %s", ap, emailCall)
	}
	ps, closed, err := readParts(ctx, a, id, out.Turn)
	if err != nil {
		t.Fatal(err)
	}
	if got := providerIDs(t, ps); !slices.Equal(got, []string{weatherCall + "=" + w.weatherID, emailCall + "=" + w.emailID}) {
		t.Fatalf("tool calls in the stream (baton id=provider id) = %q", got)
	}
	if closed != streams.Open || ps[len(ps)-1].Type != parts.DataSuspended {
		t.Fatalf("stream after Start: closed=%q, last part %+v", closed, ps[len(ps)-1])
	}
	// The read tool already ran; the email waits.
	if o := output(ps, weatherCall); o == nil || o.Type != parts.ToolOutputAvailable || string(o.Output) != weatherOut {
		t.Fatalf("get_weather result before the suspension = %+v, want %s", o, weatherOut)
	}
	if o := output(ps, emailCall); o != nil {
		t.Fatalf("send_email has a result before its approval: %+v", o)
	}
	if !slices.ContainsFunc(ps, func(p parts.Part) bool {
		return p.Type == parts.ToolApprovalRequest && p.ToolCallID == emailCall && p.ApprovalID == ap.ID
	}) {
		t.Fatal("no tool-approval-request for send_email in the stream")
	}
	checkRecorded(t, "A", recA, 1)

	if err := a.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: ap.ID, Decision: d, Reason: answerReason(d)}); err != nil {
		t.Fatal(err)
	}

	// Invocation B: nothing shared with A but the emulator and the server.
	recB := &recorder{Model: w.model(t, srv.URL), session: id}
	b := fresh(demoAgent(t, recB))
	out2, err := b.runner.Resume(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out2.Kind != turn.Completed || out2.Turn != out.Turn || out2.Steps != 1 || out2.Usage.Steps != 2 {
		t.Fatalf("Resume: %+v, want completed after 1 more step (2 in all)", out2)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the server got %d requests, want 2", len(reqs))
	}
	checkRecorded(t, "B", recB, 1)

	// The final stream.
	ps, closed, err = readParts(ctx, b, id, out.Turn)
	if err != nil {
		t.Fatal(err)
	}
	if closed != streams.Completed || ps[len(ps)-1].Type != parts.Finish {
		t.Fatalf("final stream: closed=%q, last part %+v", closed, ps[len(ps)-1])
	}
	if o := output(ps, weatherCall); o == nil || o.Type != parts.ToolOutputAvailable || string(o.Output) != weatherOut {
		t.Fatalf("final stream: get_weather result = %+v", o)
	}
	emailOut := `{"messageId":"msg-` + id + "/" + out.Turn + "/ex_" + emailCall + `","sent":true,"to":"team@example.com"}`
	email := output(ps, emailCall)
	executions := count(facts(t, b, id), reducer.ExecutionStarted)
	switch d {
	case reducer.Approve:
		if email == nil || email.Type != parts.ToolOutputAvailable || string(email.Output) != emailOut {
			t.Fatalf("final stream: send_email result = %+v, want output %s", email, emailOut)
		}
		if executions != 1 {
			t.Fatalf("%d execution.started facts for the approved email, want 1", executions)
		}
	case reducer.Deny:
		if email == nil || email.Type != parts.ToolOutputDenied {
			t.Fatalf("final stream: send_email result = %+v, want tool-output-denied", email)
		}
		if executions != 0 {
			t.Fatalf("%d execution.started facts for a denied email", executions)
		}
	}
	var reasoning, text strings.Builder
	var sigs []string
	for _, p := range ps {
		switch p.Type {
		case parts.ReasoningDelta:
			reasoning.WriteString(p.Delta)
		case parts.TextDelta:
			text.WriteString(p.Delta)
		case parts.ReasoningEnd:
			var m struct {
				Baton struct {
					Signature string `json:"signature"`
				} `json:"baton"`
			}
			if len(p.ProviderMetadata) > 0 {
				if err := json.Unmarshal(p.ProviderMetadata, &m); err != nil {
					t.Fatal(err)
				}
				sigs = append(sigs, m.Baton.Signature)
			}
		}
	}
	if reasoning.String() != joined(reasoningPieces) {
		t.Fatalf("streamed reasoning = %q", reasoning.String())
	}
	if want := joined(textPieces) + joined(finalPieces); text.String() != want {
		t.Fatalf("streamed text = %q, want %q", text.String(), want)
	}
	if w.signature != "" && !slices.Equal(sigs, []string{w.signature}) {
		t.Fatalf("reasoning signatures in the stream = %q, want [%q]", sigs, w.signature)
	}

	// B's model input, provider-neutral: the user message, the assistant
	// step with both calls, then one tool message with both results.
	var conv []conversation.Message
	if err := json.Unmarshal(recB.seen[0], &conv); err != nil {
		t.Fatal(err)
	}
	if len(conv) != 3 || conv[0].Role != conversation.User || conv[1].Role != conversation.Assistant || conv[2].Role != conversation.ToolRole {
		t.Fatalf("conversation in B = %s", recB.seen[0])
	}
	results := []result{{id: w.weatherID, text: weatherOut}, {id: w.emailID, text: emailOut}}
	if d == reducer.Deny {
		results[1] = result{id: w.emailID, text: conversation.DeniedResult(answerReason(d)), error: true}
		if !strings.HasPrefix(results[1].text, conversation.DeniedText) || !strings.Contains(results[1].text, js(answerReason(d))) {
			t.Fatalf("the denied result %q does not carry the operator's reason %q", results[1].text, answerReason(d))
		}
	}
	if got := conv[2].Content; len(got) != 2 ||
		got[0].ToolCallID != w.weatherID || got[0].IsError || string(got[0].Output) != weatherOut ||
		got[1].ToolCallID != w.emailID || got[1].IsError != results[1].error || string(got[1].Output) != string(mustJSONText(results[1].text)) {
		t.Fatalf("tool results in B's conversation = %s", recB.seen[0])
	}

	// Rebuilt again later, after the turn ended, from the snapshot in a
	// fresh invocation: the same bytes, plus the final answer.
	later, err := fresh(nil).sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if later.State.Turn != nil || len(later.History) != 4 {
		t.Fatalf("after completion: turn %+v, %d history messages", later.State.Turn, len(later.History))
	}
	prefix, err := json.Marshal(later.History[:3])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(prefix, recB.seen[0]) {
		t.Fatalf("the snapshot's conversation differs from what B sent:\n%s\n%s", prefix, recB.seen[0])
	}
	if last := later.History[3]; last.Role != conversation.Assistant || len(last.Content) != 1 || last.Content[0].Text != joined(finalPieces) {
		t.Fatalf("final message in the snapshot = %+v", last)
	}
	return outcome{session: id, turn: out.Turn, requests: reqs, results: results}
}

// answerReason is the reason the operator gives with decision d.
func answerReason(d reducer.Decision) string { return "operator says " + string(d) }

// mustJSONText is a JSON result as conversation stores it: a JSON value
// kept as is, any other text as a JSON string.
func mustJSONText(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// checkRecorded checks that a recorder saw n steps and that each step's
// input was byte-identical to both rebuilds from durable state.
func checkRecorded(t *testing.T, inv string, r *recorder, n int) {
	t.Helper()
	if len(r.errs) > 0 {
		t.Fatalf("invocation %s: rebuilding from durable state: %v", inv, errors.Join(r.errs...))
	}
	if len(r.seen) != n {
		t.Fatalf("invocation %s asked the model for %d steps, want %d", inv, len(r.seen), n)
	}
	for i, seen := range r.seen {
		for j, rb := range r.rebuilt[i] {
			if !bytes.Equal(seen, rb) {
				t.Fatalf("invocation %s, step %d: rebuild %d from durable state differs from the runner's input:\n%s\n%s", inv, i, j, rb, seen)
			}
		}
	}
}

// providerIDs lists the stream's tool calls as "baton id=provider id".
func providerIDs(t testing.TB, ps []parts.Part) []string {
	t.Helper()
	var out []string
	for _, p := range ps {
		if p.Type != parts.ToolInputAvailable {
			continue
		}
		var m struct {
			Baton struct {
				ProviderCallID string `json:"providerCallId"`
			} `json:"baton"`
		}
		if len(p.ProviderMetadata) > 0 {
			if err := json.Unmarshal(p.ProviderMetadata, &m); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, p.ToolCallID+"="+m.Baton.ProviderCallID)
	}
	return out
}

// output returns the result part of a tool call, or nil.
func output(ps []parts.Part, callID string) *parts.Part {
	for i, p := range ps {
		switch p.Type {
		case parts.ToolOutputAvailable, parts.ToolOutputError, parts.ToolOutputDenied:
			if p.ToolCallID == callID {
				return &ps[i]
			}
		}
	}
	return nil
}

// sameJSON reports whether got and want are the same JSON value.
func sameJSON(t testing.TB, got json.RawMessage, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatalf("%v: %s", err, want)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// demoToolNames are the demo tools, in the order the model must see them.
var demoToolNames = []string{"get_weather", "search_docs", "send_email"}

// decisions runs f as one subtest per answer.
func decisions(t *testing.T, f func(t *testing.T, d reducer.Decision)) {
	for _, d := range []reducer.Decision{reducer.Approve, reducer.Deny} {
		t.Run(string(d), func(t *testing.T) { f(t, d) })
	}
}
