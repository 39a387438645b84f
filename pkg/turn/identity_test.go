package turn_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// repeatedIDs is a turn whose model gives every call the same id (%s):
// two emails in step 1, a third in step 2.
const repeatedIDs = `{"steps":[
 {"text":"Two emails.","toolCalls":[
   {"id":%[1]q,"name":"send_email","input":{"to":"a@example.com","subject":"A"}},
   {"id":%[1]q,"name":"send_email","input":{"to":"b@example.com","subject":"B"}}]},
 {"text":"One more.","toolCalls":[
   {"id":%[1]q,"name":"send_email","input":{"to":"c@example.com","subject":"C"}}]},
 {"text":"Done."}
]}`

// TestRepeatedToolCallIDsAreKeptApart has the model give three calls to an
// approval-requiring tool no id, or one id, within a step and across
// steps. Each call asks for its own approval; denying the first neither
// denies nor approves the others; each approved call runs once under its
// own execution and idempotency key; the model sees each result paired with
// its own call.
func TestRepeatedToolCallIDsAreKeptApart(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "call_1"} {
		t.Run(fmt.Sprintf("id=%q", id), func(t *testing.T) {
			ctx := ctxT(t)
			agent := demoAgent(t, script(t, fmt.Sprintf(repeatedIDs, id)), turn.Limits{})
			inv := fresh(t, agent)
			sid := newSession(t, inv, "Email a, b and c.")
			out, err := inv.runner.Start(ctx, sid)
			if err != nil || out.Cause != reducer.CauseApproval {
				t.Fatalf("start: %+v %v", out, err)
			}
			tid := out.Turn
			calls := []string{turn.CallID(tid, 0, 0), turn.CallID(tid, 0, 1), turn.CallID(tid, 1, 0)}
			pending := func() []reducer.Approval {
				t.Helper()
				sess, err := inv.sessions.Load(ctx, sid)
				if err != nil {
					t.Fatal(err)
				}
				return sess.State.Turn.Pending
			}
			step1 := pending()
			if len(step1) != 2 || step1[0].ToolCallID != calls[0] || step1[1].ToolCallID != calls[1] || step1[0].ID == step1[1].ID {
				t.Fatalf("step 1 approvals = %+v, want one each for %v", step1, calls[:2])
			}
			if err := inv.sessions.Answer(ctx, sid, operator, reducer.Answer{ApprovalID: step1[0].ID, Decision: reducer.Deny, Reason: "not a"}); err != nil {
				t.Fatal(err)
			}
			if err := inv.sessions.Answer(ctx, sid, operator, reducer.Answer{ApprovalID: step1[1].ID, Decision: reducer.Approve, Reason: ""}); err != nil {
				t.Fatal(err)
			}

			// Step 2's call repeats the id: it asks again, and is not
			// settled by either of step 1's answers.
			out, err = fresh(t, agent).runner.Resume(ctx, sid)
			if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseApproval {
				t.Fatalf("resume: %+v %v, want suspended for step 2's approval", out, err)
			}
			step2 := pending()
			if len(step2) != 1 || step2[0].ToolCallID != calls[2] || step2[0].ID == step1[0].ID || step2[0].ID == step1[1].ID ||
				!strings.Contains(string(step2[0].Input), "c@example.com") {
				t.Fatalf("step 2 approvals = %+v, want a new one for %s", step2, calls[2])
			}
			if err := inv.sessions.Answer(ctx, sid, operator, reducer.Answer{ApprovalID: step2[0].ID, Decision: reducer.Approve, Reason: ""}); err != nil {
				t.Fatal(err)
			}
			out, err = fresh(t, agent).runner.Resume(ctx, sid)
			if err != nil || out.Kind != turn.Completed {
				t.Fatalf("final resume: %+v %v", out, err)
			}

			fs := facts(t, inv, sid)
			if n := count(fs, reducer.ApprovalRequested); n != 3 {
				t.Fatalf("%d approval.requested facts, want 3", n)
			}
			var execs []string
			for _, f := range fs {
				if f.Type == reducer.ExecutionStarted {
					execs = append(execs, f.Execution.ID)
				}
			}
			if want := []string{"ex_" + calls[1], "ex_" + calls[2]}; !slices.Equal(execs, want) {
				t.Fatalf("executions = %v, want %v", execs, want)
			}

			// The stream: the denied call has a denial, each approved one
			// its own output, sent to its own recipient under its own key.
			ps, _ := readParts(t, inv, sid, tid)
			results := map[string][]parts.Part{}
			for _, p := range ps {
				switch p.Type {
				case parts.ToolOutputAvailable, parts.ToolOutputDenied, parts.ToolOutputError:
					results[p.ToolCallID] = append(results[p.ToolCallID], p)
				}
			}
			if r := results[calls[0]]; len(r) != 1 || r[0].Type != parts.ToolOutputDenied {
				t.Fatalf("result of the denied call = %+v", r)
			}
			for i, to := range map[int]string{1: "b@example.com", 2: "c@example.com"} {
				want := `{"messageId":"msg-` + sid + "/" + tid + "/ex_" + calls[i] + `","sent":true,"to":"` + to + `"}`
				if r := results[calls[i]]; len(r) != 1 || r[0].Type != parts.ToolOutputAvailable || string(r[0].Output) != want {
					t.Fatalf("result of %s = %+v, want %s", calls[i], r, want)
				}
			}

			// The model's input: three calls under distinct ids, each result
			// under its call's id. The model's own id is kept where it is
			// unique (the first use), else baton's id stands in.
			var msgs []struct {
				Role    string `json:"role"`
				Content []struct {
					Type       string          `json:"type"`
					ToolCallID string          `json:"toolCallId"`
					Input      json.RawMessage `json:"input"`
					Output     json.RawMessage `json:"output"`
				} `json:"content"`
			}
			if err := json.Unmarshal(transcript(t, inv, sid), &msgs); err != nil {
				t.Fatal(err)
			}
			var wire []string
			paired := map[string]string{} // wire id -> input, then output
			for _, m := range msgs {
				for _, c := range m.Content {
					switch c.Type {
					case "tool-call":
						wire = append(wire, c.ToolCallID)
						paired[c.ToolCallID] = string(c.Input)
					case "tool-result":
						paired[c.ToolCallID] += " -> " + string(c.Output)
					}
				}
			}
			want := slices.Clone(calls)
			if id != "" {
				want[0] = id
			}
			if !slices.Equal(wire, want) {
				t.Fatalf("wire ids = %v, want %v", wire, want)
			}
			for i, to := range []string{"a@", "b@", "c@"} {
				p := paired[want[i]]
				in, res, _ := strings.Cut(p, " -> ")
				if !strings.Contains(in, to) || (i == 0) != strings.Contains(res, "denied") || (i > 0 && !strings.Contains(res, to)) {
					t.Fatalf("call %s pairs %s", want[i], p)
				}
			}
		})
	}
}
