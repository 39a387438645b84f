package tick_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

var system = reducer.Actor{Kind: reducer.ActorSystem, ID: "tick"}

const slowThree = `{"steps":[
 {"delay":"300ms","text":"first","toolCalls":[{"name":"get_weather","input":{"city":"Rome"}}]},
 {"delay":"300ms","text":"second","toolCalls":[{"name":"get_weather","input":{"city":"Lima"}}]},
 {"delay":"300ms","text":"third and final"}
]}`

func TestReapedTurnResumesWithNoStepLost(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	lim := turn.Limits{Budget: time.Second, Margin: 100 * time.Millisecond, LeaseGrace: 50 * time.Millisecond}
	agent := demoAgent(t, script(t, slowThree), lim)
	inv := s.fresh(agent)
	id := newSession(t, inv, "Go.")

	// The invocation dies in the middle of the second step.
	dying, kill := context.WithCancel(context.Background())
	time.AfterFunc(450*time.Millisecond, kill)
	if _, err := inv.runner.Start(dying, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed invocation: %v", err)
	}
	st := teststack.Load(t, inv.sessions, id)
	if st.Status != reducer.Running {
		t.Fatalf("after the crash: %s", st.Status)
	}

	// While the lease holds, the tick leaves the turn alone.
	before := len(teststack.Facts(t, inv.sessions, id))
	rep, err := s.fresh(nil).tick.Run(ctx)
	if err != nil || rep.Reaped != 0 {
		t.Fatalf("tick under the lease: %+v, %v", rep, err)
	}
	if n := len(teststack.Facts(t, inv.sessions, id)); n != before {
		t.Fatalf("the tick wrote %d facts under the lease", n-before)
	}

	// Past it, any number of ticks at once reap it exactly once.
	s.pass(st.Turn.Lease.Add(20 * time.Millisecond))
	reaped := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := s.fresh(nil).tick.Run(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			reaped += rep.Reaped
			mu.Unlock()
		}()
	}
	wg.Wait()
	fs := teststack.Facts(t, inv.sessions, id)
	last := fs[len(fs)-1]
	if reaped != 1 || len(fs) != before+1 || last.Type != reducer.TurnSuspended || last.Cause != reducer.CauseLease ||
		last.Actor != system || last.Turn != st.Turn.ID {
		t.Fatalf("reaped %d times; last fact %+v", reaped, last)
	}
	ws := s.receive(t)
	if len(ws) != 1 || ws[0].Session != id || ws[0].Reason != wake.Lease || ws[0].Seq != last.Seq {
		t.Fatalf("wakes after the reap = %+v", ws)
	}

	// The worker resumes the turn from its last checkpoint.
	res, err := s.fresh(agent).worker.Handle(ctx, ws[0])
	if err != nil || res.Runs != 1 {
		t.Fatalf("worker: %+v, %v", res, err)
	}
	out := res.Outcomes[0]
	if out.Kind != turn.Completed || out.Steps != 2 || out.Usage.Steps != 3 {
		t.Fatalf("resumed turn: %+v", out)
	}
	// No step lost, none repeated.
	var roles []string
	for _, m := range transcript(t, inv, id) {
		roles = append(roles, string(m.Role))
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool,assistant,tool,assistant" {
		t.Fatalf("conversation roles = %s", got)
	}
	// Nothing is due any more.
	if rep, err := s.fresh(nil).tick.Run(ctx); err != nil || rep.Seen != 0 {
		t.Fatalf("tick after completion: %+v, %v", rep, err)
	}
}

const threeSteps = `{"steps":[
 {"text":"Let me check the weather in Paris.","toolCalls":[{"name":"get_weather","input":{"city":"Paris"}}]},
 {"text":"And the runbook.","toolCalls":[{"name":"search_docs","input":{"query":"rain plan"}}]},
 {"text":"Paris is clear and the rain plan is in the runbook."}
]}`

const approvalScript = `{"steps":[
 {"text":"I will email the team.","toolCalls":[{"name":"send_email","input":{"to":"team@example.com","subject":"Status"}}]},
 {"text":"Done."}
]}`

func TestLostWakesAreResent(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{MaxStepsPerInvocation: 1})
	inv := s.fresh(agent)

	// A turn suspended for its budget, whose wake is lost.
	budget := newSession(t, inv, "Go.")
	if out, err := inv.runner.Start(ctx, budget); err != nil || out.Cause != reducer.CauseBudget {
		t.Fatalf("start: %+v, %v", out, err)
	}
	// A message whose wake is lost.
	inbox := newSession(t, inv, "Hello?")
	// A turn waiting for an operator: no wake would help it.
	approval := newSession(t, inv, "Email the team.")
	if out, err := s.fresh(demoAgent(t, script(t, approvalScript), turn.Limits{})).runner.Start(ctx, approval); err != nil || out.Cause != reducer.CauseApproval {
		t.Fatalf("start: %+v, %v", out, err)
	}
	s.receive(t) // the queue loses everything

	// Within the grace period the wakes may still be in flight.
	tk := s.fresh(nil).tick
	rep, err := tk.Run(ctx)
	if err != nil || rep.Rewoken != 0 || rep.Seen != 2 {
		t.Fatalf("tick within grace: %+v, %v", rep, err)
	}
	if ws := s.receive(t); len(ws) != 0 {
		t.Fatalf("wakes sent within grace: %+v", ws)
	}

	// Past it, through the Lambda handler, the two are woken again.
	tk.Now = at(tick.DefaultGrace + time.Second)
	rep, err = tk.HandleScheduled(ctx, events.EventBridgeEvent{ID: "ev-1", DetailType: "Scheduled Event", Source: "aws.events", Time: time.Now()})
	if err != nil || rep.Rewoken != 2 || rep.Seen != 2 || rep.Reaped != 0 || rep.Expired != 0 || rep.Stopped || rep.Pages < 1 {
		t.Fatalf("tick past grace: %+v, %v", rep, err)
	}
	ws := s.receive(t)
	got := map[string]wake.Reason{}
	for _, w := range ws {
		got[w.Session] = w.Reason
	}
	if len(ws) != 2 || got[budget] != wake.Rewake || got[inbox] != wake.Rewake {
		t.Fatalf("wakes = %+v", ws)
	}
	for _, id := range []string{budget, approval} {
		if fs := teststack.Facts(t, inv.sessions, id); fs[len(fs)-1].Actor == system {
			t.Fatalf("the tick wrote a fact for %s", id)
		}
	}

	// The re-sent wakes run the turns.
	for _, w := range ws {
		res, err := s.fresh(agent).worker.Handle(ctx, w)
		if err != nil || res.Runs != 1 {
			t.Fatalf("worker on %+v: %+v, %v", w, res, err)
		}
	}
	if n := count(teststack.Facts(t, inv.sessions, budget), reducer.TurnResumed); n != 1 {
		t.Fatalf("%d turn.resumed facts, want 1", n)
	}
	if n := count(teststack.Facts(t, inv.sessions, inbox), reducer.TurnStarted); n != 1 {
		t.Fatalf("%d turn.started facts, want 1", n)
	}
}

func TestExpiredApprovalIsDenied(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	rec := &recorder{Model: script(t, approvalScript)}
	agent := demoAgent(t, rec, turn.Limits{ApprovalTTL: time.Hour})
	inv := s.fresh(agent)
	id := newSession(t, inv, "Email the team.")
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Cause != reducer.CauseApproval {
		t.Fatalf("start: %+v, %v", out, err)
	}
	ap := teststack.Load(t, inv.sessions, id).Turn.Pending[0]

	// Before it expires the tick leaves it for the operator.
	tk := s.fresh(nil).tick
	if rep, err := tk.Run(ctx); err != nil || rep.Expired != 0 || rep.Seen != 0 {
		t.Fatalf("tick before expiry: %+v, %v", rep, err)
	}
	tk.Now = at(2 * time.Hour)
	rep, err := tk.Run(ctx)
	if err != nil || rep.Expired != 1 || rep.Seen != 1 || rep.Rewoken != 0 {
		t.Fatalf("tick after expiry: %+v, %v", rep, err)
	}
	fs := teststack.Facts(t, inv.sessions, id)
	last := fs[len(fs)-1]
	if last.Type != reducer.ApprovalAnswered || last.Actor != system || last.Answer == nil ||
		last.Answer.ApprovalID != ap.ID || last.Answer.Decision != reducer.Deny || last.Answer.Reason != "expired" {
		t.Fatalf("last fact = %s", mustJSON(t, last))
	}
	// Answer sent the wake; the expiry is not repeated.
	ws := s.receive(t)
	if len(ws) != 1 || ws[0].Session != id {
		t.Fatalf("wakes = %+v", ws)
	}
	if rep, err := tk.Run(ctx); err != nil || rep.Expired != 0 {
		t.Fatalf("second tick: %+v, %v", rep, err)
	}

	res, err := s.fresh(agent).worker.Handle(ctx, ws[0])
	if err != nil || res.Runs != 1 || res.Outcomes[0].Kind != turn.Completed {
		t.Fatalf("worker: %+v, %v", res, err)
	}
	var response, denied, ran bool
	for _, p := range readParts(t, inv, id, out.Turn) {
		switch {
		case p.Type == parts.ToolApprovalResponse && p.ApprovalID == ap.ID && p.Approved != nil && !*p.Approved && p.Reason == "expired":
			response = true
		case p.Type == parts.ToolOutputDenied && p.ToolCallID == ap.ToolCallID:
			denied = true
		case p.Type == parts.ToolOutputAvailable && p.ToolCallID == ap.ToolCallID:
			ran = true
		}
	}
	if !response || !denied || ran {
		t.Fatalf("stream: approval response %v, tool-output-denied %v, tool ran %v", response, denied, ran)
	}
	// The model's last request carried the denial as the call's result,
	// under the id the model gave the call.
	reqs := rec.requests()
	saw := false
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, c := range m.Content {
			if m.Role == conversation.ToolRole && c.ToolCallID == "call_0_0" && c.ToolName == ap.Tool && c.IsError && strings.Contains(string(c.Output), "denied") {
				saw = true
			}
		}
	}
	if !saw {
		t.Fatalf("the model never saw the denial: %s", mustJSON(t, reqs[len(reqs)-1].Messages))
	}
}

// slowWaker takes its time over every wake.
type slowWaker struct {
	wake.Waker
	delay time.Duration
}

func (w slowWaker) Wake(ctx context.Context, wk wake.Wake, d time.Duration) error {
	select {
	case <-time.After(w.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return w.Waker.Wake(ctx, wk, d)
}

func TestRunStopsBeforeItsDeadline(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	inv := s.fresh(nil)
	const n = 40
	for range n {
		newSession(t, inv, "Anyone?")
	}
	tk := s.fresh(nil).tick
	tk.Now = at(tick.DefaultGrace + time.Second)
	// 40 wakes of 150 ms two at a time take 3 s: more than the 2 s run.
	// The margin is wide so a loaded machine's slow visit stays within it.
	tk.Waker = slowWaker{Waker: tk.Sessions.Waker, delay: 150 * time.Millisecond}
	tk.Concurrency = 2
	tk.Margin = 700 * time.Millisecond
	tk.PageSize = 10

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	rep, err := tk.Run(ctx)
	if err != nil || !rep.Stopped {
		t.Fatalf("run = %+v, %v; want stopped, no error", rep, err)
	}
	if time.Now().After(dl) {
		t.Fatalf("the run ended %v after its deadline", time.Since(dl))
	}
	if rep.Rewoken == 0 || rep.Rewoken >= n || rep.Seen != rep.Rewoken {
		t.Fatalf("run = %+v, want some but not all of %d woken", rep, n)
	}

	// The margin follows the deadline: with the default 5 s, a run with
	// 1 s left still takes sessions, and stops before its deadline.
	tk.Margin = 0
	ctx1, cancel1 := context.WithTimeout(context.Background(), time.Second)
	defer cancel1()
	dl1, _ := ctx1.Deadline()
	rewoken := rep.Rewoken
	rep, err = tk.Run(ctx1)
	if err != nil || rep.Seen == 0 || rep.Pages == 0 {
		t.Fatalf("run with less time left than the default margin = %+v, %v", rep, err)
	}
	if time.Now().After(dl1) {
		t.Fatalf("the run ended %v after its deadline", time.Since(dl1))
	}
	rewoken += rep.Rewoken

	// Without a deadline the next run sees the rest, in one page of each
	// shard of the due index: the wakes the runs before re-sent are due
	// again only a grace after.
	tk.Waker, tk.PageSize = nil, 0
	rep, err = tk.Run(ctxT(t))
	if err != nil || rep.Stopped || rep.Seen != n-rewoken || rep.Rewoken != n-rewoken || rep.Pages != dynamo.DueShards {
		t.Fatalf("unbounded run after %d re-sent = %+v, %v", rewoken, rep, err)
	}
}

func TestRunRefusesAnIncompleteTick(t *testing.T) {
	t.Parallel()
	if _, err := (&tick.Tick{}).Run(context.Background()); err == nil {
		t.Fatal("a tick without a session store ran")
	}
	s := newStack(t)
	tk := s.fresh(nil).tick
	tk.Waker, tk.Sessions.Waker = nil, nil
	if _, err := tk.Run(context.Background()); err == nil {
		t.Fatal("a tick without a waker ran")
	}
}

// TestShortDeadlineStillReaps runs the tick with less time left than its
// default margin, as a dev server ticking every second does: the killed
// turn is reaped all the same.
func TestShortDeadlineStillReaps(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	lim := turn.Limits{Budget: time.Second, Margin: 100 * time.Millisecond, LeaseGrace: 50 * time.Millisecond}
	inv := s.fresh(demoAgent(t, script(t, slowThree), lim))
	id := newSession(t, inv, "Go.")
	dying, kill := context.WithCancel(context.Background())
	time.AfterFunc(450*time.Millisecond, kill)
	if _, err := inv.runner.Start(dying, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed invocation: %v", err)
	}
	st := teststack.Load(t, inv.sessions, id)
	if st.Status != reducer.Running {
		t.Fatalf("after the crash: %s", st.Status)
	}
	s.pass(st.Turn.Lease.Add(20 * time.Millisecond))

	tk := s.fresh(nil).tick
	tk.Margin = 0 // the default, 5 s, more than the run has
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rep, err := tk.Run(ctx)
	if err != nil || rep.Reaped != 1 {
		t.Fatalf("tick with 1 s left = %+v, %v; want the turn reaped", rep, err)
	}
	if st := teststack.Load(t, inv.sessions, id); st.Status != reducer.Suspended || st.Turn.Cause != reducer.CauseLease {
		t.Fatalf("after the tick: %s", st.Status)
	}
}
