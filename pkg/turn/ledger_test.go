package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// charger is a side-effecting tool whose first run hangs until its
// invocation dies, so the run stops between "execution started" and the
// result.
type charger struct {
	mu      sync.Mutex
	keys    []string
	started chan struct{}
	// rerun, when not nil, makes the second run hang like the first: it
	// is closed as that run starts.
	rerun chan struct{}
}

func (c *charger) tool(idempotent bool) tool.Tool {
	return tool.Tool{
		Name: "charge", Description: "Charge a card.", Effect: tool.Write, Idempotent: idempotent,
		Schema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
		Run: func(ctx context.Context, call tool.Call) (json.RawMessage, error) {
			c.mu.Lock()
			c.keys = append(c.keys, call.IdempotencyKey)
			n := len(c.keys)
			c.mu.Unlock()
			hang := c.started
			if n == 2 {
				hang = c.rerun
			}
			if n <= 2 && hang != nil {
				close(hang)
				<-ctx.Done() // the process dies here
				return nil, ctx.Err()
			}
			return json.RawMessage(`{"charged":true}`), nil
		},
	}
}

const chargeScript = `{"steps":[
 {"text":"Charging.","toolCalls":[{"name":"charge","input":{"amount":5}}]},
 {"text":"Charged."}
]}`

// killMidExecution starts a turn and kills it while the charge runs.
func killMidExecution(t *testing.T, idempotent bool) (*turn.Agent, *charger, *invocation, string) {
	t.Helper()
	ch := &charger{started: make(chan struct{})}
	reg, err := tool.NewRegistry(ch.tool(idempotent))
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", Model: script(t, chargeScript), Tools: reg,
		Limits: turn.Limits{Budget: 2 * time.Second, Margin: 100 * time.Millisecond, LeaseGrace: 10 * time.Millisecond}}
	inv := fresh(t, agent)
	id := newSession(t, inv, "Charge me.")
	dying, kill := context.WithCancel(context.Background())
	go func() { <-ch.started; kill() }()
	if _, err := inv.runner.Start(dying, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed run: %v", err)
	}
	ctx := ctxT(t)
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sess.State.Turn.Executions); n != 1 {
		t.Fatalf("%d executions recorded before the kill, want 1", n)
	}
	pass(t, sess.State.Turn.Lease.Add(10*time.Millisecond))
	return agent, ch, inv, id
}

// outputsFor returns the tool results for call; call "" means every call.
func outputsFor(ps []parts.Part, call string) []parts.Part {
	var out []parts.Part
	for _, p := range ps {
		if (call == "" || p.ToolCallID == call) && (p.Type == parts.ToolOutputAvailable || p.Type == parts.ToolOutputError) {
			out = append(out, p)
		}
	}
	return out
}

func TestLedgerIdempotentToolRerunsWithSameKey(t *testing.T) {
	t.Parallel()
	agent, ch, inv, id := killMidExecution(t, true)
	out, err := fresh(t, agent).runner.Resume(ctxT(t), id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume: %+v %v", out, err)
	}
	if len(ch.keys) != 2 || ch.keys[0] != ch.keys[1] {
		t.Fatalf("runs = %v, want two runs with one key", ch.keys)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	if got := outputsFor(ps, turn.CallID(out.Turn, 0, 0)); len(got) != 1 || got[0].Type != parts.ToolOutputAvailable {
		t.Fatalf("outputs = %+v", got)
	}
}

func TestLedgerUncertainRerun(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent, ch, inv, id := killMidExecution(t, false)
	out, err := fresh(t, agent).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseUncertain {
		t.Fatalf("resume: %+v %v, want suspended uncertain", out, err)
	}
	if len(ch.keys) != 1 {
		t.Fatalf("a non-idempotent tool ran %d times before a verdict", len(ch.keys))
	}
	sess, _ := inv.sessions.Load(ctx, id)
	ex := sess.State.Turn.Uncertain
	if ex == nil || ex.ToolCallID != turn.CallID(sess.State.Turn.ID, 0, 0) {
		t.Fatalf("uncertain = %+v", ex)
	}
	if _, err := fresh(t, agent).runner.Resume(ctx, id); !errors.Is(err, turn.ErrNotResumable) {
		t.Fatalf("resume before verdict: %v", err)
	}
	if err := inv.sessions.Settle(ctx, id, operator, ex.ID, reducer.Rerun); err != nil {
		t.Fatal(err)
	}
	before := len(facts(t, inv, id))
	if err := inv.sessions.Settle(ctx, id, operator, ex.ID, reducer.Abandon); !errors.Is(err, session.ErrNotPending) {
		t.Fatalf("second verdict: %v", err)
	}
	if n := len(facts(t, inv, id)); n != before {
		t.Fatal("a second verdict wrote a fact")
	}
	out, err = fresh(t, agent).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume after rerun: %+v %v", out, err)
	}
	if len(ch.keys) != 2 || ch.keys[0] != ch.keys[1] {
		t.Fatalf("runs = %v", ch.keys)
	}
}

// A rerun is an execution of its own: recorded before it runs, under a new
// execution id, with the same idempotency key. An invocation that dies
// during the rerun leaves it uncertain again, for an operator to settle;
// the rerun verdict on the first execution allowed one run, not two.
func TestLedgerKillDuringRerunAsksAgain(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent, ch, inv, id := killMidExecution(t, false)
	ch.rerun = make(chan struct{})
	if out, err := fresh(t, agent).runner.Resume(ctx, id); err != nil || out.Cause != reducer.CauseUncertain {
		t.Fatalf("resume: %+v %v, want suspended uncertain", out, err)
	}
	sess, _ := inv.sessions.Load(ctx, id)
	first := *sess.State.Turn.Uncertain
	if err := inv.sessions.Settle(ctx, id, operator, first.ID, reducer.Rerun); err != nil {
		t.Fatal(err)
	}

	// The rerun dies as it runs.
	dying, kill := context.WithCancel(ctx)
	go func() { <-ch.rerun; kill() }()
	if _, err := fresh(t, agent).runner.Resume(dying, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed rerun: %v", err)
	}
	sess, _ = inv.sessions.Load(ctx, id)
	pass(t, sess.State.Turn.Lease.Add(10*time.Millisecond))

	out, err := fresh(t, agent).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseUncertain {
		t.Fatalf("resume after the killed rerun: %+v %v, want suspended uncertain (runs %d)", out, err, len(ch.keys))
	}
	if len(ch.keys) != 2 {
		t.Fatalf("the charge ran %d times on one rerun verdict, want 2", len(ch.keys))
	}
	sess, _ = inv.sessions.Load(ctx, id)
	second := sess.State.Turn.Uncertain
	if second == nil || second.ID == first.ID || second.ToolCallID != first.ToolCallID || second.Attempt != 2 {
		t.Fatalf("uncertain after the rerun = %+v, want attempt 2 of %+v under a new id", second, first)
	}
	// The verdict on the first execution does not answer the second.
	before := len(facts(t, inv, id))
	if err := inv.sessions.Settle(ctx, id, operator, first.ID, reducer.Rerun); !errors.Is(err, session.ErrNotPending) {
		t.Fatalf("the first execution's verdict again: %v, want not pending", err)
	}
	if n := len(facts(t, inv, id)); n != before {
		t.Fatal("a verdict on a settled execution wrote a fact")
	}
	if err := inv.sessions.Settle(ctx, id, operator, second.ID, reducer.Rerun); err != nil {
		t.Fatal(err)
	}
	out, err = fresh(t, agent).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume after the second rerun: %+v %v", out, err)
	}
	if len(ch.keys) != 3 || ch.keys[0] != ch.keys[1] || ch.keys[1] != ch.keys[2] {
		t.Fatalf("runs = %v, want three runs with one key", ch.keys)
	}
	fs := facts(t, inv, id)
	if s, v := count(fs, reducer.ExecutionStarted), count(fs, reducer.ExecutionVerdict); s != 3 || v != 2 {
		t.Fatalf("%d execution.started and %d verdicts, want 3 and 2", s, v)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	if got := outputsFor(ps, first.ToolCallID); len(got) != 1 || got[0].Type != parts.ToolOutputAvailable {
		t.Fatalf("outputs = %+v, want one result", got)
	}
}

func TestLedgerUncertainAbandon(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent, ch, inv, id := killMidExecution(t, false)
	if out, err := fresh(t, agent).runner.Resume(ctx, id); err != nil || out.Cause != reducer.CauseUncertain {
		t.Fatalf("resume: %+v %v", out, err)
	}
	sess, _ := inv.sessions.Load(ctx, id)
	if err := inv.sessions.Settle(ctx, id, operator, sess.State.Turn.Uncertain.ID, reducer.Abandon); err != nil {
		t.Fatal(err)
	}
	out, err := fresh(t, agent).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume after abandon: %+v %v", out, err)
	}
	if len(ch.keys) != 1 {
		t.Fatalf("an abandoned tool ran again: %v", ch.keys)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	got := outputsFor(ps, turn.CallID(out.Turn, 0, 0))
	if len(got) != 1 || got[0].Type != parts.ToolOutputError || got[0].ErrorText != turn.AbandonedText {
		t.Fatalf("outputs = %+v", got)
	}
	// The model saw the unknown outcome, and no call is left without a result.
	if tr := string(transcript(t, inv, id)); !strings.Contains(tr, "outcome of this tool call is unknown") {
		t.Fatalf("transcript lacks the abandoned result: %s", tr)
	}
}

// A side effect cut short by the invocation's own deadline gets no result:
// the model is not told it failed when it may have happened. The turn
// suspends for its budget, and the next invocation settles the call as it
// would after a crash: an idempotent one reruns with the same key, any
// other waits for a verdict.
func TestLedgerCallCutByTheDeadline(t *testing.T) {
	t.Parallel()
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			ctx := ctxT(t)
			ch := &charger{started: make(chan struct{})}
			reg, err := tool.NewRegistry(ch.tool(idempotent))
			if err != nil {
				t.Fatal(err)
			}
			agent := &turn.Agent{Name: "demo", Model: script(t, chargeScript), Tools: reg,
				Limits: turn.Limits{Budget: 500 * time.Millisecond, Margin: 100 * time.Millisecond}}
			inv := fresh(t, agent)
			id := newSession(t, inv, "Charge me.")
			out, err := inv.runner.Start(ctx, id)
			if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseBudget {
				t.Fatalf("start: %+v %v, want suspended for the budget", out, err)
			}
			ps, _ := readParts(t, inv, id, out.Turn)
			if got := outputsFor(ps, ""); len(got) != 0 {
				t.Fatalf("the cut call has results %+v, want none", got)
			}
			out, err = fresh(t, agent).runner.Resume(ctx, id)
			if !idempotent {
				if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseUncertain {
					t.Fatalf("resume: %+v %v, want suspended uncertain", out, err)
				}
				if len(ch.keys) != 1 {
					t.Fatalf("a non-idempotent tool ran %d times before a verdict", len(ch.keys))
				}
				return
			}
			if err != nil || out.Kind != turn.Completed {
				t.Fatalf("resume: %+v %v", out, err)
			}
			if len(ch.keys) != 2 || ch.keys[0] != ch.keys[1] {
				t.Fatalf("runs = %v, want two runs with one key", ch.keys)
			}
			ps, _ = readParts(t, inv, id, out.Turn)
			if got := outputsFor(ps, ""); len(got) != 1 || got[0].Type != parts.ToolOutputAvailable {
				t.Fatalf("outputs = %+v", got)
			}
		})
	}
}

const twoApprovals = `{"steps":[
 {"text":"Two emails and a lookup.","toolCalls":[
   {"name":"send_email","input":{"to":"a@example.com","subject":"A"}},
   {"name":"get_weather","input":{"city":"Porto"}},
   {"name":"send_email","input":{"to":"b@example.com","subject":"B"}}]},
 {"text":"Both sent."}
]}`

func TestParallelApprovalsEitherOrder(t *testing.T) {
	t.Parallel()
	for _, order := range []string{"first-then-second", "second-then-first"} {
		t.Run(order, func(t *testing.T) {
			ctx := ctxT(t)
			agent := demoAgent(t, script(t, twoApprovals), turn.Limits{})
			inv := fresh(t, agent)
			id := newSession(t, inv, "Email both.")
			out, err := inv.runner.Start(ctx, id)
			if err != nil || out.Cause != reducer.CauseApproval {
				t.Fatalf("start: %+v %v", out, err)
			}
			sess, _ := inv.sessions.Load(ctx, id)
			pend := sess.State.Turn.Pending
			if len(pend) != 2 {
				t.Fatalf("%d approvals requested at once, want 2", len(pend))
			}
			ps, _ := readParts(t, inv, id, out.Turn)
			if len(outputsFor(ps, turn.CallID(out.Turn, 0, 1))) != 1 {
				t.Fatal("the read tool did not run before the suspension")
			}
			if order == "second-then-first" {
				pend[0], pend[1] = pend[1], pend[0]
			}
			if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: pend[0].ID, Decision: reducer.Approve, Reason: ""}); err != nil {
				t.Fatal(err)
			}
			if _, err := fresh(t, agent).runner.Resume(ctx, id); !errors.Is(err, turn.ErrNotResumable) {
				t.Fatalf("resumed with one approval pending: %v", err)
			}
			if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: pend[1].ID, Decision: reducer.Approve, Reason: ""}); err != nil {
				t.Fatal(err)
			}
			out, err = fresh(t, agent).runner.Resume(ctx, id)
			if err != nil || out.Kind != turn.Completed {
				t.Fatalf("resume: %+v %v", out, err)
			}
			if n := count(facts(t, inv, id), reducer.TurnResumed); n != 1 {
				t.Fatalf("%d resumes, want 1", n)
			}
			var results []string
			var msgs []struct {
				Role    string `json:"role"`
				Content []struct {
					ToolCallID string `json:"toolCallId"`
				} `json:"content"`
			}
			if err := json.Unmarshal(transcript(t, inv, id), &msgs); err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.Role == "tool" {
					for _, c := range m.Content {
						results = append(results, c.ToolCallID)
					}
				}
			}
			if got := strings.Join(results, ","); got != "call_0_0,call_0_1,call_0_2" {
				t.Fatalf("results in order %s, want call order", got)
			}
		})
	}
}

// TestLedgerCost measures the ledger's extra durable writes: the same turn
// with a side-effecting tool and with a read tool. A side effect's step is
// written before it runs, and its execution.started recorded; a read that
// returns within turn.BilledGrace has its result written with its step, in
// one chunk. So the ledger adds one PUT and one transaction.
func TestLedgerCost(t *testing.T) {
	t.Parallel()
	onEmulator(t) // counts requests, injects faults or reads the queue
	writes := func(effect tool.Effect) (puts, txns int64) {
		t.Helper()
		reg, err := tool.NewRegistry(tool.Tool{
			Name: "charge", Effect: effect, Idempotent: true,
			Schema: json.RawMessage(`{"type":"object"}`),
			Run: func(context.Context, tool.Call) (json.RawMessage, error) {
				return json.RawMessage(`{"ok":true}`), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		inv := fresh(t, &turn.Agent{Name: "demo", Model: script(t, chargeScript), Tools: reg})
		id := newSession(t, inv, "Charge me.")
		inv.counter.Reset()
		if out, err := inv.runner.Start(ctxT(t), id); err != nil || out.Kind != turn.Completed {
			t.Fatalf("%+v %v", out, err)
		}
		return inv.counter.Total("s3:PutObject"), inv.counter.Total("dynamodb:TransactWriteItems")
	}
	rp, rt := writes(tool.Read)
	wp, wt := writes(tool.Write)
	t.Logf("read tool: %d PUTs, %d transactions; write tool: %d PUTs, %d transactions", rp, rt, wp, wt)
	if wp-rp != 1 || wt-rt != 1 {
		t.Fatalf("the ledger added %d PUTs and %d transactions, want 1 and 1", wp-rp, wt-rt)
	}
}

// A turn cancelled while a side effect is uncertain leaves later turns
// knowing the call may have taken effect, not that it never ran.
func TestCancelWhileUncertainSaysTheOutcomeIsUnknown(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent, ch, inv, id := killMidExecution(t, false)
	if out, err := fresh(t, agent).runner.Resume(ctx, id); err != nil || out.Cause != reducer.CauseUncertain {
		t.Fatalf("resume: %+v %v", out, err)
	}
	if err := inv.sessions.Cancel(ctx, id, operator, "leave it"); err != nil {
		t.Fatal(err)
	}
	if len(ch.keys) != 1 {
		t.Fatalf("the charge ran %d times", len(ch.keys))
	}
	tr := string(transcript(t, inv, id))
	if !strings.Contains(tr, "may or may not have taken effect") || strings.Contains(tr, "was not run") {
		t.Fatalf("the history after the cancel: %s", tr)
	}
}
