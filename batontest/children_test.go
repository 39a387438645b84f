package batontest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/pkg/reducer"
)

// playFunc is a model played by a Go function: given the request, the
// step's text and tool calls. Each step costs 100 input and 10 output
// tokens.
type playFunc func(req baton.Request) (string, []baton.ModelCall)

func (f playFunc) Stream(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
	return func(yield func(baton.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(baton.Event{}, &baton.ModelError{Kind: baton.ModelInterrupted, Err: err})
			return
		}
		text, calls := f(req)
		if text != "" && !yield(baton.Event{Type: baton.TextDelta, Text: text}, nil) {
			return
		}
		stop := baton.StopEnd
		for _, c := range calls {
			if !yield(baton.Event{Type: baton.ToolCall, Call: c}, nil) {
				return
			}
			stop = baton.StopToolCalls
		}
		yield(baton.Event{Type: baton.Finish, Stop: stop, Usage: baton.Usage{InputTokens: 100, OutputTokens: 10}}, nil)
	}
}

// modelFunc is a model of one function.
type modelFunc func(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error]

func (f modelFunc) Stream(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
	return f(ctx, req)
}

// asker calls the agents named in tasks (agent → task), one call each, in
// its first step, and then answers with the results it got.
func asker(tasks ...[2]string) playFunc {
	return func(req baton.Request) (string, []baton.ModelCall) {
		if rs := req.Results(); len(rs) > 0 {
			var b strings.Builder
			for _, r := range rs {
				fmt.Fprintf(&b, "[%s %s err=%v]", r.ToolName, r.Output, r.IsError)
			}
			return b.String(), nil
		}
		var calls []baton.ModelCall
		for i, t := range tasks {
			in, _ := json.Marshal(map[string]string{"task": t[1]})
			calls = append(calls, baton.ModelCall{ID: fmt.Sprintf("ask-%d", i), Name: t[0], Input: in})
		}
		return "Asking.", calls
	}
}

// answerer answers its task in one step: "done: <task>".
var answerer = playFunc(func(req baton.Request) (string, []baton.ModelCall) {
	return "done: " + req.LastUserText(), nil
})

func factCount(s *batontest.Session, typ reducer.Type) int {
	n := 0
	for _, f := range s.Facts() {
		if f.Type == typ {
			n++
		}
	}
	return n
}

// TestChildOne: a parent calls one child agent as a tool. The parent's turn
// suspends for its children with no invocation running; the child runs in
// a session of its own (same owner, naming its parent) and its end wakes
// the parent, whose call's result is the child's final answer. The test
// steps each session by hand (RunAlone) to see it in between.
func TestChildOne(t *testing.T) {
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "check order A-1"}), Children: baton.Children{Agents: []string{"fraud"}}},
		{Name: "fraud", Model: answerer},
	}})
	p := kit.Session("desk")
	p.Post("Refund A-1.")
	out := p.RunAlone()
	if out.Kind != batontest.Suspended || out.Cause != reducer.CauseChildren {
		t.Fatalf("parent run = %+v, want suspended for children", out)
	}
	if st := p.State(); st.Status != reducer.Suspended || st.Next(kit.Now(), 0).Action != reducer.None {
		t.Fatalf("parent %s needs %v while its child runs, want nothing", st.Status, st.Next(kit.Now(), 0))
	}
	kids := p.Children()
	if len(kids) != 1 {
		t.Fatalf("children %d, want 1", len(kids))
	}
	c := kids[0]
	cst := c.State()
	if cst.Parent == nil || cst.Parent.Session != p.ID || cst.Owner != batontest.Owner || cst.Agent != "fraud" || cst.Parent.Depth != 1 {
		t.Fatalf("child state %+v parent %+v", cst, cst.Parent)
	}
	if out := c.RunAlone(); out.Kind != batontest.Completed {
		t.Fatalf("child run = %+v", out)
	}
	if !c.State().Reported {
		t.Fatalf("child did not record that it reported")
	}
	if out := p.RunAlone(); out.Kind != batontest.Completed {
		t.Fatalf("parent resume = %+v", out)
	}
	if got, want := p.Call("fraud").Output, `"done: check order A-1"`; string(got) != want {
		t.Fatalf("fraud call's result %s, want %s", got, want)
	}
	if n := factCount(p, reducer.ChildEnded); n != 1 {
		t.Fatalf("%d child.ended facts, want 1", n)
	}
	// A duplicate report (a late wake) changes nothing.
	ctx := context.Background()
	if err := kit.Engine().Sessions.Report(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if n := factCount(p, reducer.ChildEnded); n != 1 {
		t.Fatalf("after a second report, %d child.ended facts, want 1", n)
	}
}

// TestChildRunsWithItsParent: the parent's Run runs its child's turn as
// the deployed wakes would (the child starts, ends and reports), and the
// parent's turn resumes with the child's answer, all in that one Run. A
// Run with nothing to do says why; a child's task, before the child ran
// (RunAlone), is not reported as idle.
func TestChildRunsWithItsParent(t *testing.T) {
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "check order A-1"}), Children: baton.Children{Agents: []string{"fraud"}}},
		{Name: "fraud", Model: answerer},
	}})
	p := kit.Session("desk")
	p.Post("Refund A-1.")
	if out := p.Run(); out.Kind != batontest.Completed || out.Idle != "" {
		t.Fatalf("parent run = %+v, want its turn completed, with its child's", out)
	}
	kids := p.Children()
	if len(kids) != 1 {
		t.Fatalf("children %d, want 1", len(kids))
	}
	if st := kids[0].State(); st.Last != reducer.TurnCompleted || !st.Reported || st.Usage.Steps != 1 {
		t.Fatalf("child: %s, last %s, reported %v, steps %d; want completed in one step and reported", st.Status, st.Last, st.Reported, st.Usage.Steps)
	}
	if got, want := p.Call("fraud").Output, `"done: check order A-1"`; string(got) != want {
		t.Fatalf("fraud call's result %s, want %s", got, want)
	}
	if n := factCount(p, reducer.ChildEnded); n != 1 {
		t.Fatalf("%d child.ended facts, want 1", n)
	}
	for _, s := range []*batontest.Session{p, kids[0]} {
		if out := s.Run(); out.Kind != "" || out.Idle != "idle: no message waiting" {
			t.Fatalf("a Run of %s with nothing to do = %+v, want it to say it is idle with no message waiting", s.ID, out)
		}
	}

	// Stepped by hand, the child waits with its task until its own Run.
	q := kit.Session("desk")
	q.Post("Refund A-2.")
	if out := q.RunAlone(); out.Cause != reducer.CauseChildren {
		t.Fatalf("parent RunAlone = %+v, want suspended for its child", out)
	}
	c := q.Children()[0]
	if got, want := c.Waiting(), "not started: 1 message(s) waiting for a turn, which the next Run starts"; got != want {
		t.Fatalf("child before its run waits for %q, want %q", got, want)
	}
	if out := q.RunAlone(); out.Kind != "" || out.Idle != "suspended: waiting for its children, which wait for the test (see their Waiting)" {
		t.Fatalf("parent RunAlone while its child waits = %+v", out)
	}
	if out := c.RunAlone(); out.Kind != batontest.Completed {
		t.Fatalf("child RunAlone = %+v", out)
	}
	if out := q.RunAlone(); out.Kind != batontest.Completed {
		t.Fatalf("parent RunAlone after its child = %+v", out)
	}
}

// TestChildCancelCascades: cancelling the parent cancels its child, which
// waits on a child of its own, and that grandchild too, which had not yet
// started: none of them runs a step after the cancel. The test steps each
// session by hand (RunAlone), to cancel before the grandchild runs.
func TestChildCancelCascades(t *testing.T) {
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "check A-1"}), Children: baton.Children{Agents: []string{"fraud"}}},
		{Name: "fraud", Model: asker([2]string{"leaf", "look up A-1"}), Children: baton.Children{Agents: []string{"leaf"}}},
		{Name: "leaf", Model: answerer},
	}})
	p := kit.Session("desk")
	p.Post("Refund A-1.")
	p.RunAlone()
	mid := p.Children()[0]
	if out := mid.RunAlone(); out.Cause != reducer.CauseChildren {
		t.Fatalf("child run = %+v, want suspended for its own child", out)
	}
	leaf := mid.Children()[0]
	if st := leaf.State(); st.Parent == nil || st.Parent.Depth != 2 || st.Status != reducer.Idle || len(st.Inbox) != 1 {
		t.Fatalf("grandchild before the cancel: %+v", st)
	}

	p.Cancel("no longer needed")
	if st := mid.State(); st.Turn != nil || st.Last != reducer.TurnCancelled {
		t.Fatalf("child after the parent's cancel: status %s, last %s", st.Status, st.Last)
	}
	// The grandchild never started: its first invocation finds that its
	// parent no longer waits, and ends its turn as cancelled, stepless.
	leaf.RunAlone()
	if st := leaf.State(); st.Turn != nil || st.Last != reducer.TurnCancelled || st.Usage.Steps != 0 {
		t.Fatalf("grandchild after the cancel: status %s, last %s, usage %+v", st.Status, st.Last, st.Usage)
	}
	mid.RunAlone()
	for _, s := range []*batontest.Session{p, mid, leaf} {
		if n := factCount(s, reducer.ChildEnded); n != 0 {
			t.Fatalf("%s: %d child.ended facts after a cancel, want none", s.ID, n)
		}
		if st := s.State(); st.Status != reducer.Idle {
			t.Fatalf("%s: %s, want idle", s.ID, st.Status)
		}
	}
}

// TestChildSpendCountsTowardsParent: a child's usage counts in its parent
// session's usage when the child ends, so the parent's session cap stops
// the parent's next step.
func TestChildSpendCountsTowardsParent(t *testing.T) {
	var lim baton.Limits
	lim.Spend.Session.Cost = 0.5
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "check A-1"}), Children: baton.Children{Agents: []string{"fraud"}},
			Price: &baton.Price{InputPerMTok: 1000}, Limits: lim},
		{Name: "fraud", Model: answerer, Price: &baton.Price{InputPerMTok: 10000}},
	}})
	p := kit.Session("desk")
	p.Post("Refund A-1.")
	// The parent's step ($0.10 of the $0.50 cap), the child's ($1.00),
	// and the parent's resume, stopped at its cap.
	out := p.Run()
	c := p.Children()[0]
	if u := c.State().Usage; u.CostMicroUSD != 1_000_000 {
		t.Fatalf("child usage %+v", u)
	}
	st := p.State()
	if out.Kind != batontest.Suspended || out.Cause != reducer.CauseLimit || st.Turn.Limit.Scope != reducer.ScopeSession {
		t.Fatalf("parent after its child spent $1: %+v (limit %+v), want suspended at its session cap", out, st.Turn.Limit)
	}
	if st.Usage.CostMicroUSD != 1_100_000 {
		t.Fatalf("parent session usage %+v, want its $0.10 and the child's $1.00", st.Usage)
	}
}

type holdIn struct {
	Order string `json:"order"`
}

// TestChildFanOutApprovalThroughParentChat: a parent fans out three
// children in one step. One child's tool call needs an approval: the
// request shows in the parent's stream (data-child-approval, naming the
// child and its approval id) and in GET /sessions/{parent}; the answer,
// sent through the parent's chat with the child's approval id, is recorded
// by the child, under its checks. The parent resumes once all three have
// ended, with each child's answer as its call's result, and each child's
// tool ran once.
func TestChildFanOutApprovalThroughParentChat(t *testing.T) {
	var mu sync.Mutex
	held := map[string]int{}
	hold := baton.Func("hold", "Hold an order.", func(ctx context.Context, in holdIn) (string, error) {
		mu.Lock()
		held[in.Order]++
		mu.Unlock()
		return "held " + in.Order, nil
	}, baton.Write(), baton.NeedsApproval(baton.When(func(in holdIn) bool { return in.Order == "B" })))
	checker := playFunc(func(req baton.Request) (string, []baton.ModelCall) {
		if rs := req.Results(); len(rs) > 0 {
			return "checked " + req.LastUserText(), nil
		}
		in, _ := json.Marshal(holdIn{Order: req.LastUserText()})
		return "", []baton.ModelCall{{ID: "h1", Name: "hold", Input: in}}
	})
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "A"}, [2]string{"fraud", "B"}, [2]string{"fraud", "C"}),
			Children: baton.Children{Agents: []string{"fraud"}}},
		{Name: "fraud", Model: checker, Tools: []baton.Tool{hold}},
	}})
	ctx := context.Background()
	chatID := "chat-fanout"
	pid := chat.SessionID(batontest.Owner, chatID)
	if _, err := kit.Engine().Sessions.Create(ctx, pid, batontest.Owner, "desk"); err != nil {
		t.Fatal(err)
	}
	p := kit.Open(pid)
	p.Post("Check orders A, B and C.")
	// The parent fans out, its children run (A and C end, B waits for
	// its approval), and the parent resumes to show the request, and
	// waits again.
	if out := p.Run(); out.Cause != reducer.CauseChildren {
		t.Fatalf("parent run = %+v", out)
	}
	kids := p.Children()
	if len(kids) != 3 {
		t.Fatalf("%d children, want 3", len(kids))
	}
	b := kids[1]
	pend := b.Pending()
	if len(pend) != 1 || kids[0].Status() != reducer.Idle || kids[2].Status() != reducer.Idle {
		t.Fatalf("child B pending %+v; A %s, C %s", pend, kids[0].Status(), kids[2].Status())
	}
	if out := p.Run(); out.Kind != "" || out.Idle != "suspended: waiting for its children, which wait for the test (see their Waiting)" {
		t.Fatalf("parent run while B waits = %+v, want nothing run, saying it waits for its children", out)
	}
	if got, want := b.Waiting(), "suspended: waiting for an operator's answer to 1 approval request(s)"; got != want {
		t.Fatalf("child B waits for %q, want %q", got, want)
	}
	var shown []map[string]any
	for _, part := range p.Parts() {
		if part.Type == "data-child-approval" {
			var d map[string]any
			_ = json.Unmarshal(part.Data, &d)
			shown = append(shown, d)
		}
	}
	if len(shown) != 1 || shown[0]["child"] != b.ID || shown[0]["id"] != pend[0].ID {
		t.Fatalf("data-child-approval parts %v, want one naming child %s and approval %s", shown, b.ID, pend[0].ID)
	}
	srv := httptest.NewServer(kit.App.Operator(func(r *http.Request) (string, bool) {
		return r.Header.Get("X-Baton-Operator"), r.Header.Get("X-Baton-Operator") != ""
	}, 0, ""))
	defer srv.Close()
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("X-Baton-Operator", batontest.Owner)
		req.Header.Set("Content-Type", "application/json")
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(rctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		n, _ := io.ReadAtLeast(resp.Body, buf, 1) // the head of a stream will do
		return resp.StatusCode, string(buf[:n])
	}
	var view struct {
		ChildPending []struct {
			Child      string `json:"child"`
			ApprovalID string `json:"approvalId"`
		} `json:"childPending"`
	}
	code, body := call("GET", "/sessions/"+pid, "")
	if err := json.Unmarshal([]byte(body), &view); code != 200 || err != nil || len(view.ChildPending) != 1 ||
		view.ChildPending[0].Child != b.ID || view.ChildPending[0].ApprovalID != pend[0].ID {
		t.Fatalf("GET /sessions/%s: %d %s", pid, code, body)
	}
	turn := p.State().Turn.ID
	answer := func(approval string) (int, string) {
		return call("POST", "/chat", fmt.Sprintf(`{"id":%q,"agent":"desk","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]},`+
			`{"id":%q,"role":"assistant","parts":[{"type":"tool-hold","toolCallId":%q,"state":"approval-responded","input":{},"approval":{"id":%q,"approved":true}}]}]}`,
			chatID, turn, pend[0].ToolCallID, approval))
	}
	// An approval id no child showed is refused, and writes nothing.
	before := len(b.Facts())
	if code, body := answer("ap_made_up"); code != http.StatusConflict {
		t.Fatalf("answer with a made-up approval id: %d %s", code, body)
	}
	if code, body := answer(pend[0].ID); code != http.StatusOK {
		t.Fatalf("answer through the parent's chat: %d %s", code, body)
	}
	if n := len(b.Facts()); n != before+1 || len(b.Pending()) != 0 {
		t.Fatalf("child B after the chat's answer: %d new facts, pending %+v", n-before, b.Pending())
	}
	// The parent's Run runs B, which reports its end, and the parent
	// resumes.
	if out := p.Run(); out.Kind != batontest.Completed {
		t.Fatalf("parent after its children: %+v", out)
	}
	if st := b.State(); st.Last != reducer.TurnCompleted || !st.Reported {
		t.Fatalf("child B after approval: last %s, reported %v", st.Last, st.Reported)
	}
	for i, o := range []string{"A", "B", "C"} {
		if held[o] != 1 {
			t.Fatalf("hold ran %d times for %s, want 1", held[o], o)
		}
		if got := string(p.ToolCalls()[i].Output); got != fmt.Sprintf(`"checked %s"`, o) {
			t.Fatalf("call %d's result %s", i, got)
		}
	}
	if n := factCount(p, reducer.ChildEnded); n != 3 {
		t.Fatalf("%d child.ended facts, want 3", n)
	}
}

// TestHandoff: an agent hands the conversation to another, which answers
// the rest of the turn with its own instructions and tools, and the
// session's later turns too. The hand-off is a fact: an invocation killed
// during the new agent's first step is resumed with a byte-identical model
// input.
func TestHandoff(t *testing.T) {
	var mu sync.Mutex
	var reqs []baton.Request
	killed := make(chan struct{})
	billing := modelFunc(func(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
		mu.Lock()
		reqs = append(reqs, req)
		first := len(reqs) == 1
		mu.Unlock()
		if first {
			close(killed) // the process dies mid-step
			<-ctx.Done()
		}
		return playFunc(func(req baton.Request) (string, []baton.ModelCall) {
			return "Billing here: " + req.LastUserText(), nil
		}).Stream(ctx, req)
	})
	triage := playFunc(func(req baton.Request) (string, []baton.ModelCall) {
		return "Passing you on.", []baton.ModelCall{{ID: "h1", Name: "handoff_to_billing", Input: json.RawMessage(`{"reason":"a refund"}`)}}
	})
	refund := baton.Func("refund", "Refund an order.", func(context.Context, holdIn) (string, error) { return "ok", nil })
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "triage", Model: triage, System: "You triage.", Children: baton.Children{Handoffs: []string{"billing"}}},
		{Name: "billing", Model: billing, System: "You do billing.", Tools: []baton.Tool{refund}},
	}})
	s := kit.Session("triage")
	s.Post("Refund A-1.")
	s.RunKilled(killed)
	if st := s.State(); st.Agent != "billing" || st.Status != reducer.Running {
		t.Fatalf("after the kill: agent %q, %s; want billing, still running", st.Agent, st.Status)
	}
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("resume = %+v", out)
	}
	if n := factCount(s, reducer.HandedOff); n != 1 {
		t.Fatalf("%d agent.handed-off facts, want 1", n)
	}
	if len(reqs) != 2 {
		t.Fatalf("billing was asked %d times, want 2 (the killed step and its redo)", len(reqs))
	}
	a, _ := json.Marshal(reqs[0])
	b, _ := json.Marshal(reqs[1])
	if string(a) != string(b) {
		t.Fatalf("the resumed model input differs from the killed one:\n%s\n%s", a, b)
	}
	if reqs[0].System != "You do billing." || len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "refund" {
		t.Fatalf("billing's step ran with system %q and tools %+v", reqs[0].System, reqs[0].Tools)
	}
	if got := s.Call("handoff_to_billing").Output; string(got) != `{"agent":"billing"}` {
		t.Fatalf("hand-off result %s", got)
	}
	s.Post("And A-2.")
	s.Run()
	if n := len(reqs); n != 3 || !strings.Contains(s.Text(), "Billing here: And A-2.") {
		t.Fatalf("the next turn: billing asked %d times, text %q", n, s.Text())
	}
}

// TestChildLimits: a call past the agent's maxChildren, or one that would
// nest a child past its maxDepth, gets an error result the model sees, and
// starts no child.
func TestChildLimits(t *testing.T) {
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "A"}, [2]string{"fraud", "B"}),
			Children: baton.Children{Agents: []string{"fraud"}, MaxChildren: 1}},
		{Name: "fraud", Model: asker([2]string{"leaf", "deeper"}), Children: baton.Children{Agents: []string{"leaf"}, MaxDepth: 1}},
		{Name: "leaf", Model: answerer},
	}})
	p := kit.Session("desk")
	p.Post("Check A and B.")
	// The parent's Run runs its child, which ends, and then the parent.
	if out := p.Run(); out.Kind != batontest.Completed {
		t.Fatalf("parent = %+v", out)
	}
	kids := p.Children()
	if len(kids) != 1 {
		t.Fatalf("%d children started, want 1 (maxChildren)", len(kids))
	}
	if c := p.ToolCalls()[1]; c.Error == "" || !strings.Contains(c.Error, "maxChildren") {
		t.Fatalf("the second call: %s, want an error naming maxChildren", c)
	}
	// The child is at depth 1; its own child would be at 2, past its maxDepth of 1.
	if st := kids[0].State(); st.Last != reducer.TurnCompleted {
		t.Fatalf("child = %s, last %s, want completed", st.Status, st.Last)
	}
	if c := kids[0].ToolCalls()[0]; !strings.Contains(c.Error, "maxDepth") || len(kids[0].Children()) != 0 {
		t.Fatalf("the child's call: %s, children %d", c, len(kids[0].Children()))
	}
}

// TestChildEachAndFailedChild: with Each the parent resumes as each child
// ends, streaming that child's result, and waits again for the rest; a
// child cancelled on its own (by an operator) is an error result for its
// call, and the parent goes on. The test steps each session by hand
// (RunAlone), to cancel B while it runs.
func TestChildEachAndFailedChild(t *testing.T) {
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "A"}, [2]string{"fraud", "B"}),
			Children: baton.Children{Agents: []string{"fraud"}, Each: true}},
		{Name: "fraud", Model: asker([2]string{"leaf", "x"}), Children: baton.Children{Agents: []string{"leaf"}}},
		{Name: "leaf", Model: answerer},
	}})
	p := kit.Session("desk")
	p.Post("Check A and B.")
	p.RunAlone()
	kids := p.Children()
	a, b := kids[0], kids[1]
	a.RunAlone() // waits for its leaf
	leaf := a.Children()[0]
	leaf.RunAlone()
	if out := a.RunAlone(); out.Kind != batontest.Completed {
		t.Fatalf("child A = %+v", out)
	}
	if out := p.RunAlone(); out.Kind != batontest.Suspended || out.Cause != reducer.CauseChildren {
		t.Fatalf("parent after A (each) = %+v, want resumed and suspended again for B", out)
	}
	if c := p.ToolCalls()[0]; string(c.Output) != `"[leaf \"done: x\" err=false]"` {
		t.Fatalf("A's result streamed as each ended: %s", c)
	}
	if out := p.RunAlone(); out.Kind != "" {
		t.Fatalf("parent with B still running ran %+v, want nothing", out)
	}
	b.RunAlone()
	b.Cancel("an operator stops B")
	b.RunAlone() // its cancel's wake reports the end to the parent
	if out := p.RunAlone(); out.Kind != batontest.Completed {
		t.Fatalf("parent after B's cancel = %+v", out)
	}
	if c := p.ToolCalls()[1]; c.Error == "" || !strings.Contains(c.Error, "cancelled") {
		t.Fatalf("B's call: %s, want an error result saying it was cancelled", c)
	}
}
