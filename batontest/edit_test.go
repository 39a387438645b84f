package batontest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/pkg/reducer"
)

type refundIn struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
}

// refunds is a refund tool that needs approval over 100 and counts its
// runs: the inputs it ran with and their idempotency keys.
type refunds struct {
	mu     sync.Mutex
	inputs []refundIn
	keys   []string
}

func (r *refunds) tool() baton.Tool {
	return baton.Func("refund", "Refund an order.", func(ctx context.Context, in refundIn) (string, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.inputs = append(r.inputs, in)
		r.keys = append(r.keys, baton.IdempotencyKey(ctx))
		return fmt.Sprintf("refunded %.2f on %s", in.Amount, in.Order), nil
	}, baton.NeedsApproval(baton.Over("amount", 100)))
}

func (r *refunds) runs() []refundIn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]refundIn(nil), r.inputs...)
}

// refundDesk is a kit whose model asks to refund 250 on A-1, then ends,
// with a session of it suspended for that call's approval ap; rec records
// the model's requests.
func refundDesk(t *testing.T) (kit *batontest.Kit, s *batontest.Session, ap batontest.Approval, r *refunds, rec *batontest.Recorder) {
	t.Helper()
	r = &refunds{}
	rec = batontest.Record(batontest.Script(t, `{"steps":[
	 {"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"A-1","amount":250}}]},
	 {"text":"Done."}]}`))
	kit = batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "desk", Model: rec, Tools: []baton.Tool{r.tool()}}}})
	s = kit.Session("desk")
	s.Post("Refund A-1.")
	if out := s.Run(); out.Cause != "approval" {
		t.Fatalf("first run %+v, want an approval", out)
	}
	return kit, s, s.Pending()[0], r, rec
}

// lastToolBlocks returns the tool call and its result in the model's last
// request.
func lastToolBlocks(t *testing.T, rec *batontest.Recorder) (call, result baton.Content) {
	t.Helper()
	reqs := rec.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, c := range m.Content {
			switch c.Type {
			case baton.ContentToolCall:
				call = c
			case baton.ContentToolResult:
				result = c
			}
		}
	}
	return call, result
}

// TestEditRunsTheToolWithTheNewInput: an operator who approves with an
// edit runs the tool once, with the edited input and a key of its own;
// the stream, the kit and the model's next request show the edited call,
// and the fact keeps both inputs.
func TestEditRunsTheToolWithTheNewInput(t *testing.T) {
	t.Parallel()
	_, s, ap, r, rec := refundDesk(t)
	if err := s.Edit(ap.ID, refundIn{Order: "A-1", Amount: 80}); err != nil {
		t.Fatal(err)
	}
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("after the edit: %+v", out)
	}
	runs := r.runs()
	if len(runs) != 1 || runs[0] != (refundIn{Order: "A-1", Amount: 80}) {
		t.Fatalf("refund ran with %+v, want once with the edited 80", runs)
	}
	if !strings.Contains(r.keys[0], "/edited-") {
		t.Fatalf("idempotency key %q, want one that names the edit", r.keys[0])
	}
	c := s.Call("refund")
	if !jsonEqual(c.Input, `{"order":"A-1","amount":80}`) || !jsonEqual(c.Original, `{"order":"A-1","amount":250}`) ||
		string(c.Output) != `"refunded 80.00 on A-1"` {
		t.Fatalf("call %s (original %s), want the edited input and its result", c, c.Original)
	}
	call, result := lastToolBlocks(t, rec)
	if !jsonEqual(call.Input, `{"order":"A-1","amount":80}`) || string(result.Output) != `"refunded 80.00 on A-1"` {
		t.Fatalf("the model's next request shows call %s and result %s, want the edited call", call.Input, result.Output)
	}
	var answered *reducer.Answer
	for _, f := range s.Facts() {
		if f.Type == reducer.ApprovalAnswered {
			answered = f.Answer
		}
	}
	if answered == nil || answered.Decision != reducer.Edit || !jsonEqual(answered.Input, `{"order":"A-1","amount":80}`) ||
		!jsonEqual(answered.Original, `{"order":"A-1","amount":250}`) {
		t.Fatalf("answer fact %+v, want the edit with both inputs", answered)
	}
}

// TestEditTheSchemaRefusesWritesNothing: an edit whose input the tool's
// schema refuses, or that is no object, fails with ErrBadAnswer and
// writes nothing; the approval is still pending, and an approval after it
// runs the model's input.
func TestEditTheSchemaRefusesWritesNothing(t *testing.T) {
	t.Parallel()
	_, s, ap, r, _ := refundDesk(t)
	before := len(s.Facts())
	for _, bad := range []any{
		map[string]any{"order": "A-1", "amount": "lots"},
		[]int{1, 2},
		"refund it",
	} {
		err := s.Edit(ap.ID, bad)
		if !errors.Is(err, batontest.ErrBadAnswer) {
			t.Fatalf("edit %v: %v, want ErrBadAnswer", bad, err)
		}
		if n := len(s.Facts()); n != before {
			t.Fatalf("a refused edit %v wrote %d facts", bad, n-before)
		}
	}
	if err := s.Respond("ap_nope", "done"); !errors.Is(err, batontest.ErrNotPending) {
		t.Fatalf("respond to an unknown approval: %v, want ErrNotPending", err)
	}
	if p := s.Pending(); len(p) != 1 || p[0].ID != ap.ID {
		t.Fatalf("pending %+v, want the approval still waiting", p)
	}
	s.Approve(ap.ID)
	s.Run()
	if runs := r.runs(); len(runs) != 1 || runs[0].Amount != 250 {
		t.Fatalf("refund ran with %+v, want the model's 250 once", runs)
	}
}

// TestRespondNeverRunsTheTool: an operator who answers the call by hand
// gives the model that result; the tool never runs and nothing goes
// through the ledger.
func TestRespondNeverRunsTheTool(t *testing.T) {
	t.Parallel()
	_, s, ap, r, rec := refundDesk(t)
	if err := s.Respond(ap.ID, map[string]any{"refunded": 0, "note": "refunded by hand in the till"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Respond(ap.ID, "again"); !errors.Is(err, batontest.ErrNotPending) {
		t.Fatalf("a second answer: %v, want ErrNotPending", err)
	}
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("after the response: %+v", out)
	}
	if runs := r.runs(); len(runs) != 0 {
		t.Fatalf("refund ran %d times, want never", len(runs))
	}
	if ex := s.Executions(); len(ex) != 0 {
		t.Fatalf("executions %v, want none", ex)
	}
	want := `{"note":"refunded by hand in the till","refunded":0}`
	if c := s.Call("refund"); !jsonEqual(c.Output, want) || c.Denied || c.Error != "" {
		t.Fatalf("call %s, want the operator's result", c)
	}
	if _, result := lastToolBlocks(t, rec); !jsonEqual(result.Output, want) || result.IsError {
		t.Fatalf("the model got result %s, want the operator's", result.Output)
	}
}

// TestEditByAnAgentGoesBackToApproval: an edit by an actor that is not
// an operator (an agent answering through the Go API) approves nothing
// by itself. When the tool's rules send the new input to approval, the
// call asks again, and runs only after an operator answers; an edit the
// rules let through runs.
func TestEditByAnAgentGoesBackToApproval(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		amount float64
		again  bool
	}{
		{"still over the rule", 300, true},
		{"under the rule", 50, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			kit, s, ap, r, _ := refundDesk(t)
			input, _ := json.Marshal(refundIn{Order: "A-1", Amount: c.amount})
			agent := reducer.Actor{Kind: reducer.ActorAgent, ID: "supervisor"}
			if err := kit.Engine().Sessions.Answer(context.Background(), s.ID, agent,
				reducer.Answer{ApprovalID: ap.ID, Decision: reducer.Edit, Input: input}); err != nil {
				t.Fatal(err)
			}
			out := s.Run()
			if !c.again {
				if out.Kind != batontest.Completed || len(r.runs()) != 1 || r.runs()[0].Amount != c.amount {
					t.Fatalf("after the edit: %+v, runs %+v; want the edited call run", out, r.runs())
				}
				return
			}
			if out.Cause != "approval" || len(r.runs()) != 0 {
				t.Fatalf("after the edit: %+v, runs %+v; want a new approval and no run", out, r.runs())
			}
			again := s.Pending()
			if len(again) != 1 || again[0].ID == ap.ID || !jsonEqual(again[0].Input, string(input)) {
				t.Fatalf("pending %+v, want a new approval of the edited input", again)
			}
			s.Approve(again[0].ID)
			if out := s.Run(); out.Kind != batontest.Completed {
				t.Fatalf("after the operator's approval: %+v", out)
			}
			if runs := r.runs(); len(runs) != 1 || runs[0].Amount != c.amount {
				t.Fatalf("refund ran with %+v, want the edited input once", runs)
			}
		})
	}
}

// jsonEqual reports whether raw encodes the same value as want.
func jsonEqual(raw json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
