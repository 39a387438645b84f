package turntest_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	pt "github.com/baton-run/baton/internal/provider/providertest"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// The tests in this file have a provider send two steps, each calling
// send_email (approval: always) under no id, or under the same id, and
// check that baton keeps the two calls apart: each gets its own approval,
// execution and idempotency key, and the next request pairs each result
// with its own call.

// idWire is one provider as these tests drive it.
type idWire struct {
	name string
	// same is the id a provider that repeats ids sends for both calls.
	same string
	// email is a step calling send_email to `to` under id ("" for none).
	email func(t testing.TB, id, to string) pt.Reply
	// final is a step with a final text.
	final func(t testing.TB) pt.Reply
	model func(t testing.TB, url string) model.Model
	// decode reads the tool calls and results of a request, in order.
	decode func(t *testing.T, rq pt.Request) ([]wireCall, []wireResult)
}

// wireCall and wireResult are a tool call and a tool result as a request
// carries them.
type wireCall struct{ id, to string }

type wireResult struct {
	id, text string
	error    bool
}

func emailInput(to string) string { return `{"to":` + js(to) + `,"subject":"Oslo weather"}` }

func callTo(t *testing.T, input string) string {
	t.Helper()
	var in struct {
		To string `json:"to"`
	}
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		t.Fatalf("tool call input %s: %v", input, err)
	}
	return in.To
}

var idWires = []idWire{
	{
		name: "anthropic",
		same: "toolu_01SameIdSentTwiceByServer",
		email: func(_ testing.TB, id, to string) pt.Reply {
			return anthropicSSE(flat(
				[]string{"message_start", anthropicStart("msg_01Identity", 4)},
				anthropicStartBlock(0, `{"type":"tool_use","id":`+js(id)+`,"name":"send_email","input":{}}`),
				anthropicDelta(0, `{"type":"input_json_delta","partial_json":`+js(emailInput(to))+`}`),
				anthropicStop(0),
				[]string{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}`},
				[]string{"message_stop", `{"type":"message_stop"}`},
			)...)
		},
		final: func(testing.TB) pt.Reply {
			return anthropicSSE(flat(
				[]string{"message_start", anthropicStart("msg_01IdentityEnd", 1)},
				anthropicStartBlock(0, `{"type":"text","text":""}`),
				anthropicDelta(0, `{"type":"text_delta","text":"Done."}`),
				anthropicStop(0),
				[]string{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`},
				[]string{"message_stop", `{"type":"message_stop"}`},
			)...)
		},
		model: anthropicWire().model,
		decode: func(t *testing.T, rq pt.Request) (calls []wireCall, results []wireResult) {
			for _, m := range decodeAnthropic(t, rq).Messages {
				for _, b := range m.Content {
					switch b.Type {
					case "tool_use":
						calls = append(calls, wireCall{b.ID, callTo(t, string(b.Input))})
					case "tool_result":
						results = append(results, wireResult{b.ToolUseID, anthropicResultText(t, b.Content), b.IsError != nil && *b.IsError})
					}
				}
			}
			return calls, results
		},
	},
	{
		name: "openai",
		same: "call_0", // a server numbering calls per response
		email: func(_ testing.TB, id, to string) pt.Reply {
			const cid = "chatcmpl-identity"
			head := `{"type":"function","index":0,"function":{"name":"send_email"}}`
			if id != "" {
				head = `{"id":` + js(id) + `,"type":"function","index":0,"function":{"name":"send_email"}}`
			}
			return openaiSSE(
				openaiChunk(cid, `{"role":"assistant","content":""}`, ""),
				openaiChunk(cid, `{"tool_calls":[`+head+`]}`, ""),
				openaiChunk(cid, `{"tool_calls":[{"index":0,"function":{"arguments":`+js(emailInput(to))+`}}]}`, ""),
				openaiChunk(cid, `{"content":""}`, "tool_calls"),
				openaiUsage(cid, 300, 40),
			)
		},
		final: func(testing.TB) pt.Reply {
			const cid = "chatcmpl-identity-end"
			return openaiSSE(
				openaiChunk(cid, `{"role":"assistant","content":""}`, ""),
				openaiChunk(cid, `{"content":"Done."}`, ""),
				openaiChunk(cid, `{"content":""}`, "stop"),
				openaiUsage(cid, 400, 2),
			)
		},
		model: openaiWire().model,
		decode: func(t *testing.T, rq pt.Request) (calls []wireCall, results []wireResult) {
			for _, m := range decodeOpenAI(t, rq).Messages {
				for _, c := range m.ToolCalls {
					calls = append(calls, wireCall{c.ID, callTo(t, c.Function.Arguments)})
				}
				if m.Role == "tool" {
					text := openaiText(t, m.Content)
					results = append(results, wireResult{m.ToolCallID, strings.TrimPrefix(text, "Error: "), strings.HasPrefix(text, "Error: ")})
				}
			}
			return calls, results
		},
	},
	{
		name: "bedrock",
		same: "tooluse_SameIdSentTwiceByServer",
		email: func(t testing.TB, id, to string) pt.Reply {
			return bedrockStream(t,
				bedrockEvent{"messageStart", `{"p":` + pad(35) + `,"role":"assistant"}`},
				bedrockToolStart(0, id, "send_email"),
				bedrockDelta(0, `{"toolUse":{"input":`+js(emailInput(to))+`}}`),
				bedrockStop(0),
				bedrockEvent{"messageStop", `{"p":` + pad(12) + `,"stopReason":"tool_use"}`},
				bedrockMetadata(900, 40))
		},
		final: func(t testing.TB) pt.Reply {
			return bedrockStream(t,
				bedrockEvent{"messageStart", `{"p":` + pad(35) + `,"role":"assistant"}`},
				bedrockDelta(0, `{"text":"Done."}`),
				bedrockStop(0),
				bedrockEvent{"messageStop", `{"p":` + pad(12) + `,"stopReason":"end_turn"}`},
				bedrockMetadata(1000, 2))
		},
		model: func(t testing.TB, url string) model.Model { return bedrockWire(t).model(t, url) },
		decode: func(t *testing.T, rq pt.Request) (calls []wireCall, results []wireResult) {
			for _, m := range decodeBedrock(t, rq).Messages {
				for _, b := range m.Content {
					if u := b.ToolUse; u != nil {
						calls = append(calls, wireCall{u.ToolUseID, callTo(t, string(u.Input))})
					}
					if r := b.ToolResult; r != nil {
						if len(r.Content) != 1 || r.Content[0].Text == nil {
							t.Fatalf("toolResult content = %+v", r.Content)
						}
						results = append(results, wireResult{r.ToolUseID, *r.Content[0].Text, r.Status == "error"})
					}
				}
			}
			return calls, results
		},
	},
}

func flat(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// sent is one run of send_email.
type sent struct{ call, to, key string }

// mailer is send_email that records what it ran.
type mailer struct {
	mu   sync.Mutex
	runs []sent
}

func (m *mailer) agent(t testing.TB, mod model.Model) *turn.Agent {
	t.Helper()
	tools := tool.Demo()
	for i := range tools {
		if tools[i].Name != "send_email" {
			continue
		}
		run := tools[i].Run
		tools[i].Run = func(ctx context.Context, c tool.Call) (json.RawMessage, error) {
			var in struct {
				To string `json:"to"`
			}
			_ = json.Unmarshal(c.Input, &in) // the registry checked it against the schema
			m.mu.Lock()
			m.runs = append(m.runs, sent{c.ID, in.To, c.IdempotencyKey})
			m.mu.Unlock()
			return run(ctx, c)
		}
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return &turn.Agent{Name: "demo", System: System, Model: mod, Tools: reg, MaxTokens: MaxTokens}
}

func (m *mailer) ran() []sent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.runs)
}

// TestToolCallIdentityPerProvider runs, on each provider, a turn whose two
// steps each call send_email with no id, or with the same id, and answers
// the two approvals differently in both orders. Each call gets its own
// approval request; approving one runs only that one, under its own
// execution id and idempotency key; the requests that follow pair each
// result with its own call under distinct ids.
func TestToolCallIdentityPerProvider(t *testing.T) {
	for _, w := range idWires {
		for _, mode := range []string{"no-id", "same-id"} {
			for _, ds := range [][2]reducer.Decision{{reducer.Approve, reducer.Deny}, {reducer.Deny, reducer.Approve}} {
				t.Run(w.name+"/"+mode+"/"+string(ds[0])+"-then-"+string(ds[1]), func(t *testing.T) {
					id := ""
					if mode == "same-id" {
						id = w.same
					}
					identityTurn(t, w, id, ds)
				})
			}
		}
	}
}

func identityTurn(t *testing.T, w idWire, providerID string, ds [2]reducer.Decision) {
	ctx := ctxT(t)
	tos := [2]string{"a@example.com", "b@example.com"}
	srv := pt.NewServer(t, w.email(t, providerID, tos[0]), w.email(t, providerID, tos[1]), w.final(t))
	m := &mailer{}

	// Invocation A: step 1 asks for approval of the first email.
	recA := &recorder{Model: w.model(t, srv.URL)}
	a := fresh(m.agent(t, recA))
	sid := newSession(t, a, "Email a and b.")
	recA.session = sid
	out, err := a.runner.Start(ctx, sid)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseApproval || out.Steps != 1 {
		t.Fatalf("Start: %+v, %v; want suspended for approval after 1 step", out, err)
	}
	tid := out.Turn
	calls := [2]string{turn.CallID(tid, 0, 0), turn.CallID(tid, 1, 0)}
	// The wire ids the provider must see: its own id where it gave one and
	// that is unique, else baton's.
	wires := calls
	if providerID != "" {
		wires[0] = providerID
	}
	pending := func(inv *invocation) reducer.Approval {
		t.Helper()
		sess, err := inv.sessions.Load(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if p := sess.State.Turn.Pending; len(p) != 1 {
			t.Fatalf("pending approvals = %+v, want 1", p)
		}
		return sess.State.Turn.Pending[0]
	}
	ap1 := pending(a)
	if ap1.ToolCallID != calls[0] || callTo(t, string(ap1.Input)) != tos[0] {
		t.Fatalf("first approval = %+v, want %s to %s", ap1, calls[0], tos[0])
	}
	if err := a.sessions.Answer(ctx, sid, operator, reducer.Answer{ApprovalID: ap1.ID, Decision: ds[0], Reason: ""}); err != nil {
		t.Fatal(err)
	}

	// Invocation B: step 1's answer settles step 1's call only; step 2's
	// call asks again.
	recB := &recorder{Model: w.model(t, srv.URL), session: sid}
	b := fresh(m.agent(t, recB))
	out, err = b.runner.Resume(ctx, sid)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseApproval || out.Steps != 1 {
		t.Fatalf("Resume B: %+v, %v; want suspended for a second approval after 1 more step", out, err)
	}
	ap2 := pending(b)
	if ap2.ID == ap1.ID || ap2.ToolCallID != calls[1] || callTo(t, string(ap2.Input)) != tos[1] {
		t.Fatalf("second approval = %+v, want a new one for %s to %s (first was %s)", ap2, calls[1], tos[1], ap1.ID)
	}
	if n := count(facts(t, b, sid), reducer.ApprovalRequested); n != 2 {
		t.Fatalf("%d approval.requested facts, want 2", n)
	}
	key := func(i int) string { return sid + "/" + tid + "/ex_" + calls[i] }
	var want []sent
	if ds[0] == reducer.Approve {
		want = append(want, sent{calls[0], tos[0], key(0)})
	}
	if got := m.ran(); !slices.Equal(got, want) {
		t.Fatalf("after the first answer (%s) send_email ran %+v, want %+v", ds[0], got, want)
	}
	result := func(i int, d reducer.Decision) wireResult {
		if d == reducer.Deny {
			return wireResult{wires[i], conversation.DeniedText, true}
		}
		return wireResult{wires[i], `{"messageId":"msg-` + key(i) + `","sent":true,"to":"` + tos[i] + `"}`, false}
	}
	checkPairs(t, w, srv.Requests()[1], []wireCall{{wires[0], tos[0]}}, []wireResult{result(0, ds[0])})
	if err := b.sessions.Answer(ctx, sid, operator, reducer.Answer{ApprovalID: ap2.ID, Decision: ds[1], Reason: ""}); err != nil {
		t.Fatal(err)
	}

	// Invocation C: step 2's answer settles step 2's call; the turn ends.
	recC := &recorder{Model: w.model(t, srv.URL), session: sid}
	c := fresh(m.agent(t, recC))
	out, err = c.runner.Resume(ctx, sid)
	if err != nil || out.Kind != turn.Completed || out.Steps != 1 {
		t.Fatalf("Resume C: %+v, %v; want completed after 1 more step", out, err)
	}
	if ds[1] == reducer.Approve {
		want = append(want, sent{calls[1], tos[1], key(1)})
	}
	if got := m.ran(); !slices.Equal(got, want) {
		t.Fatalf("send_email ran %+v, want %+v", got, want)
	}
	var execs []string
	for _, f := range facts(t, c, sid) {
		if f.Type == reducer.ExecutionStarted {
			execs = append(execs, f.Execution.ID+"@"+f.Execution.ToolCallID)
		}
	}
	wantExecs := []string{"ex_" + calls[0] + "@" + calls[0]}
	if ds[1] == reducer.Approve {
		wantExecs = []string{"ex_" + calls[1] + "@" + calls[1]}
	}
	if !slices.Equal(execs, wantExecs) {
		t.Fatalf("execution.started = %v, want %v", execs, wantExecs)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the server got %d requests, want 3", len(reqs))
	}
	checkPairs(t, w, reqs[2], []wireCall{{wires[0], tos[0]}, {wires[1], tos[1]}}, []wireResult{result(0, ds[0]), result(1, ds[1])})

	// The stream: one approval request per call, each answered once, and
	// the provider's id kept beside baton's.
	ps, _, err := readParts(ctx, c, sid, tid)
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	for _, p := range ps {
		if p.Type == parts.ToolApprovalRequest {
			asked = append(asked, p.ToolCallID)
		}
	}
	if !slices.Equal(asked, calls[:]) {
		t.Fatalf("tool-approval-request parts for %v, want %v", asked, calls)
	}
	if got, want := providerIDs(t, ps), []string{calls[0] + "=" + providerID, calls[1] + "=" + providerID}; !slices.Equal(got, want) {
		t.Fatalf("tool calls in the stream = %q, want %q", got, want)
	}
	checkRecorded(t, "A", recA, 1)
	checkRecorded(t, "B", recB, 1)
	checkRecorded(t, "C", recC, 1)
}

// checkPairs checks a request's tool calls and results: distinct call ids,
// one result per call under its id, as wanted.
func checkPairs(t *testing.T, w idWire, rq pt.Request, wantCalls []wireCall, wantResults []wireResult) {
	t.Helper()
	calls, results := w.decode(t, rq)
	if !slices.Equal(calls, wantCalls) {
		t.Fatalf("tool calls in the request = %+v, want %+v: %s", calls, wantCalls, rq.Body)
	}
	if !slices.Equal(results, wantResults) {
		t.Fatalf("tool results in the request = %+v, want %+v: %s", results, wantResults, rq.Body)
	}
	seen := map[string]bool{}
	for _, c := range calls {
		if seen[c.id] {
			t.Fatalf("two tool calls share id %q: %s", c.id, rq.Body)
		}
		seen[c.id] = true
	}
}
