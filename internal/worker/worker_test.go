package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

const threeSteps = `{"steps":[
 {"text":"Let me check the weather in Paris.","toolCalls":[{"name":"get_weather","input":{"city":"Paris"}}]},
 {"text":"And the runbook.","toolCalls":[{"name":"search_docs","input":{"query":"rain plan"}}]},
 {"text":"Paris is clear and the rain plan is in the runbook."}
]}`

func TestWakeStartsAndCompletesTurn(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	id := newSession(t, s.fresh(agent), "demo", "What is the weather?")

	inv := s.fresh(agent)
	res, err := inv.worker.Handle(ctx, wake.Wake{Session: id, Reason: "message", Seq: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 1 || len(res.Outcomes) != 1 || res.Outcomes[0].Kind != turn.Completed || res.Outcomes[0].Steps != 3 {
		t.Fatalf("result = %+v, want one completed run of 3 steps", res)
	}
	fs := teststack.Facts(t, inv.sessions, id)
	if count(fs, reducer.TurnStarted) != 1 || count(fs, reducer.TurnCompleted) != 1 {
		t.Fatalf("facts = %v", fs)
	}
	if st := teststack.Load(t, inv.sessions, id); st.Status != reducer.Idle || len(st.Inbox) != 0 || st.Turns != 1 {
		t.Fatalf("state after the turn = %+v", st)
	}
	page, err := inv.sessions.ReadStream(ctx, id, res.Outcomes[0].Turn, "")
	if err != nil {
		t.Fatal(err)
	}
	if page.Closed != streams.Completed {
		t.Fatalf("stream closed = %q, want completed", page.Closed)
	}
}

// suspendedForBudget returns a session whose turn ran two of three steps and
// suspended for its budget, with the queue drained.
func suspendedForBudget(t *testing.T, s *stack) (string, *turn.Agent) {
	t.Helper()
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{MaxStepsPerInvocation: 2})
	inv := s.fresh(agent)
	id := newSession(t, inv, "demo", "Go.")
	out, err := inv.runner.Start(ctxT(t), id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseBudget {
		t.Fatalf("start: %+v, %v", out, err)
	}
	if ws := s.receive(t); len(ws) != 1 || ws[0].Session != id || ws[0].Reason != "budget" {
		t.Fatalf("wakes after the budget suspension = %+v", ws)
	}
	return id, agent
}

func TestDuplicateWakesSequentialRunOnce(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	started := newSession(t, s.fresh(agent), "demo", "Start me.")
	resumed, ragent := suspendedForBudget(t, s)

	for _, c := range []struct {
		id    string
		agent *turn.Agent
		fact  reducer.Type
	}{{started, agent, reducer.TurnStarted}, {resumed, ragent, reducer.TurnResumed}} {
		w := wake.Wake{Session: c.id, Reason: "message", Seq: 2}
		runs := 0
		for range 5 {
			res, err := s.fresh(c.agent).worker.Handle(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			runs += res.Runs
		}
		fs := teststack.Facts(t, s.fresh(c.agent).sessions, c.id)
		if n := count(fs, c.fact); runs != 1 || n != 1 {
			t.Fatalf("%s: 5 deliveries ran %d times and wrote %d %s facts, want 1 and 1", c.id, runs, n, c.fact)
		}
		if count(fs, reducer.TurnCompleted) != 1 {
			t.Fatalf("%s: the turn did not complete once: %v", c.id, fs)
		}
	}
}

// sqsEvent wraps wake bodies as an SQS event, one record each.
func sqsEvent(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: fmt.Sprintf("msg-%d-%d", time.Now().UnixNano(), i), ReceiptHandle: fmt.Sprintf("rh-%d", i),
			Body: b, EventSource: "aws:sqs", AWSRegion: "us-east-1",
			Attributes: map[string]string{"ApproximateReceiveCount": "1"},
		})
	}
	return ev
}

func body(t testing.TB, w wake.Wake) string {
	t.Helper()
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDuplicateWakesConcurrentRunOnce(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	started := newSession(t, s.fresh(agent), "demo", "Start me.")
	resumed, ragent := suspendedForBudget(t, s)

	for _, c := range []struct {
		id    string
		agent *turn.Agent
		fact  reducer.Type
	}{{started, agent, reducer.TurnStarted}, {resumed, ragent, reducer.TurnResumed}} {
		b := body(t, wake.Wake{Session: c.id, Reason: "message", Seq: 2})
		var wg sync.WaitGroup
		resps := make([]events.SQSEventResponse, 5)
		errs := make([]error, 5)
		gate := make(chan struct{})
		for i := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				inv := s.fresh(c.agent) // five concurrent Lambda invocations
				<-gate
				resps[i], errs[i] = inv.worker.HandleSQS(ctx, sqsEvent(b))
			}()
		}
		close(gate)
		wg.Wait()
		for i := range 5 {
			if errs[i] != nil || len(resps[i].BatchItemFailures) != 0 {
				t.Fatalf("%s: delivery %d: %+v, %v", c.id, i, resps[i], errs[i])
			}
		}
		fs := teststack.Facts(t, s.fresh(c.agent).sessions, c.id)
		if n := count(fs, c.fact); n != 1 {
			t.Fatalf("%s: 5 concurrent deliveries wrote %d %s facts, want 1", c.id, n, c.fact)
		}
		// Whoever won ran the turn to its end; the losers wrote nothing.
		if count(fs, reducer.TurnCompleted) != 1 || count(fs, reducer.TurnSuspended) > 1 {
			t.Fatalf("%s: facts = %v", c.id, fs)
		}
	}
}

func TestOneBatchHandlesASessionOnce(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	id := newSession(t, s.fresh(agent), "demo", "Start me.")
	b := body(t, wake.Wake{Session: id, Reason: "message"})
	resp, err := s.fresh(agent).worker.HandleSQS(ctx, sqsEvent(b, b, b, b, b))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v, %v", resp, err)
	}
	if n := count(teststack.Facts(t, s.fresh(agent).sessions, id), reducer.TurnStarted); n != 1 {
		t.Fatalf("%d turn.started facts, want 1", n)
	}
}

func TestLateWakeChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	inv := s.fresh(agent)
	id := newSession(t, inv, "demo", "Go.")
	if res, err := inv.worker.Handle(ctx, wake.Wake{Session: id, Reason: "message"}); err != nil || res.Runs != 1 {
		t.Fatalf("first wake: %+v, %v", res, err)
	}
	before := teststack.Facts(t, inv.sessions, id)
	// The same wake, and one naming the suspension the turn went through,
	// arrive after the turn completed.
	for _, w := range []wake.Wake{{Session: id, Reason: "message", Seq: 2}, {Session: id, Reason: "budget", Seq: 4}} {
		res, err := s.fresh(agent).worker.Handle(ctx, w)
		if err != nil || res.Runs != 0 {
			t.Fatalf("late wake %+v: %+v, %v", w, res, err)
		}
	}
	if after := teststack.Facts(t, inv.sessions, id); len(after) != len(before) {
		t.Fatalf("late wakes wrote %d facts", len(after)-len(before))
	}
	// A wake for a session that does not exist is dropped, not retried.
	if res, err := inv.worker.Handle(ctx, wake.Wake{Session: "s_nope"}); err != nil || res.Runs != 0 {
		t.Fatalf("wake for no session: %+v, %v", res, err)
	}
}

const approvalScript = `{"steps":[
 {"text":"I will email the team.","toolCalls":[{"name":"send_email","input":{"to":"team@example.com","subject":"Status"}}]},
 {"text":"Done."}
]}`

func TestWakeLeavesPendingApprovalAlone(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, approvalScript), turn.Limits{})
	inv := s.fresh(agent)
	id := newSession(t, inv, "demo", "Email the team.")
	res, err := inv.worker.Handle(ctx, wake.Wake{Session: id, Reason: "message"})
	if err != nil || res.Runs != 1 || res.Outcomes[0].Cause != reducer.CauseApproval {
		t.Fatalf("first wake: %+v, %v", res, err)
	}
	before := len(teststack.Facts(t, inv.sessions, id))
	if res, err := s.fresh(agent).worker.Handle(ctx, wake.Wake{Session: id, Reason: "approval"}); err != nil || res.Runs != 0 {
		t.Fatalf("wake with the approval pending: %+v, %v", res, err)
	}
	if n := len(teststack.Facts(t, inv.sessions, id)); n != before {
		t.Fatalf("a wake with the approval pending wrote %d facts", n-before)
	}
	// Once answered, a wake resumes the turn.
	st := teststack.Load(t, inv.sessions, id)
	if err := inv.sessions.Answer(ctx, id, alice, reducer.Answer{ApprovalID: st.Turn.Pending[0].ID, Decision: reducer.Approve, Reason: ""}); err != nil {
		t.Fatal(err)
	}
	res, err = s.fresh(agent).worker.Handle(ctx, wake.Wake{Session: id, Reason: "approval"})
	if err != nil || res.Runs != 1 || res.Outcomes[0].Kind != turn.Completed {
		t.Fatalf("wake after the answer: %+v, %v", res, err)
	}
}

const slowThree = `{"steps":[
 {"delay":"300ms","text":"first","toolCalls":[{"name":"get_weather","input":{"city":"Rome"}}]},
 {"delay":"300ms","text":"second","toolCalls":[{"name":"get_weather","input":{"city":"Lima"}}]},
 {"delay":"300ms","text":"third and final"}
]}`

func TestWakeTakesOverAfterTheLease(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	lim := turn.Limits{Budget: time.Second, Margin: 100 * time.Millisecond, LeaseGrace: 50 * time.Millisecond}
	agent := demoAgent(t, script(t, slowThree), lim)
	inv := s.fresh(agent)
	id := newSession(t, inv, "demo", "Go.")

	// The invocation dies in the middle of the second step.
	dying, kill := context.WithCancel(context.Background())
	time.AfterFunc(450*time.Millisecond, kill)
	if _, err := inv.worker.Handle(dying, wake.Wake{Session: id}); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed invocation: %v", err)
	}
	st := teststack.Load(t, inv.sessions, id)
	if st.Status != reducer.Running {
		t.Fatalf("after the crash: %s", st.Status)
	}
	// Under the lease a wake changes nothing.
	before := len(teststack.Facts(t, inv.sessions, id))
	if res, err := s.fresh(agent).worker.Handle(ctx, wake.Wake{Session: id}); err != nil || res.Runs != 0 {
		t.Fatalf("wake under the lease: %+v, %v", res, err)
	}
	if n := len(teststack.Facts(t, inv.sessions, id)); n != before {
		t.Fatalf("a wake under the lease wrote %d facts", n-before)
	}
	s.pass(st.Turn.Lease.Add(20 * time.Millisecond))
	res, err := s.fresh(agent).worker.Handle(ctx, wake.Wake{Session: id})
	if err != nil || res.Runs != 1 || res.Outcomes[0].Kind != turn.Completed || res.Outcomes[0].Steps != 2 || res.Outcomes[0].Usage.Steps != 3 {
		t.Fatalf("wake after the lease: %+v, %v", res, err)
	}
}

const slowOne = `{"steps":[{"delay":"400ms","text":"Noted."}]}`

// interrupt posts a message and then cancels the running turn, 150 ms from
// now, leaving the session idle with the message waiting once the turn's
// invocation notices.
func interrupt(t *testing.T, s *stack, agent *turn.Agent, id, text string) {
	time.AfterFunc(150*time.Millisecond, func() {
		ss := s.fresh(agent).sessions
		if _, err := ss.Post(context.Background(), id, alice, text); err != nil {
			t.Error(err)
		}
		if err := ss.Cancel(context.Background(), id, alice, "changed my mind"); err != nil {
			t.Error(err)
		}
	})
}

func TestWorkLeftAfterARunStartsTheNextTurn(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, slowOne), turn.Limits{})
	inv := s.fresh(agent)
	id := newSession(t, inv, "demo", "First.")
	// A message arrives and the operator cancels the turn while it runs.
	// Their wakes find the session running or already handled; the worker
	// that ran the turn must start the next one itself.
	interrupt(t, s, agent, id, "Second.")
	inv.worker.Reserve = time.Second // ctx leaves under 30 s, the default
	res, err := inv.worker.Handle(ctx, wake.Wake{Session: id})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 2 || res.Outcomes[0].Kind != turn.Superseded || res.Outcomes[1].Kind != turn.Completed {
		t.Fatalf("result = %+v, want the cancelled run and a completed one", res)
	}
	st := teststack.Load(t, inv.sessions, id)
	if st.Turns != 2 || st.Last != reducer.TurnCompleted || len(st.Inbox) != 0 || st.Status != reducer.Idle {
		t.Fatalf("state = %+v", st)
	}
	for _, w := range s.receive(t) { // the message's and the cancel's wakes, now late
		if res, err := s.fresh(agent).worker.Handle(ctx, w); err != nil || res.Runs != 0 {
			t.Fatalf("late wake %+v: %+v, %v", w, res, err)
		}
	}

	// With too little time left for another turn, the worker hands the
	// waiting message to a fresh invocation instead.
	post(t, inv, id, st, "Third.")
	interrupt(t, s, agent, id, "Fourth.")
	// The runner keeps back 10 s of the deadline; the worker wants 60 s
	// left to start another turn.
	short, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	w := s.fresh(agent).worker
	w.Reserve = time.Minute
	res, err = w.Handle(short, wake.Wake{Session: id})
	if err != nil || res.Runs != 1 {
		t.Fatalf("short invocation: %+v, %v", res, err)
	}
	if st := teststack.Load(t, inv.sessions, id); st.Status != reducer.Idle || len(st.Inbox) != 1 || st.Inbox[0].Text != "Fourth." {
		t.Fatalf("after the short invocation: %+v", st)
	}
	var handedOn bool
	for _, wk := range s.receive(t) {
		handedOn = handedOn || (wk.Session == id && wk.Reason == "inbox")
	}
	if !handedOn {
		t.Fatal("no wake handed the waiting message on")
	}
}

// TestMessageDuringTurnIsAnsweredNext is what Handle's loop is for: a
// message that arrives while a turn runs is answered by the next turn as
// soon as this one ends.
func TestMessageDuringTurnIsAnsweredNext(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, slowOne), turn.Limits{})
	inv := s.fresh(agent)
	id := newSession(t, inv, "demo", "First.")
	time.AfterFunc(150*time.Millisecond, func() {
		if _, err := s.fresh(agent).sessions.Post(context.Background(), id, alice, "Second."); err != nil {
			t.Error(err)
		}
	})
	inv.worker.Reserve = time.Second
	res, err := inv.worker.Handle(ctx, wake.Wake{Session: id})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 2 || res.Outcomes[0].Kind != turn.Completed || res.Outcomes[1].Kind != turn.Completed {
		t.Fatalf("result = %+v, want two completed turns", res)
	}
}

func TestHandleSQSDropsWhatCanNeverSucceed(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	inv := s.fresh(agent)
	ghost := newSession(t, inv, "ghost", "Is anyone there?") // no such agent is deployed
	ev := sqsEvent("not json", `{"reason":"budget"}`, `{"session":"x"} trailing`, body(t, wake.Wake{Session: ghost}))
	resp, err := inv.worker.HandleSQS(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("response = %+v, %v; want every record dropped", resp, err)
	}
	if fs := teststack.Facts(t, inv.sessions, ghost); len(fs) != 2 {
		t.Fatalf("a session with an unknown agent got facts: %v", fs)
	}
}

func TestHandleSQSReportsFailedRecords(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	inv := s.fresh(agent)
	a := newSession(t, inv, "demo", "A.")
	b := newSession(t, inv, "demo", "B.")
	ev := sqsEvent(body(t, wake.Wake{Session: a}), "garbage", body(t, wake.Wake{Session: b}))

	// The invocation's context is already over: both wakes fail and must
	// come back; the garbage is dropped for good.
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	resp, err := inv.worker.HandleSQS(dead, ev)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if want := []string{ev.Records[0].MessageId, ev.Records[2].MessageId}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batch item failures = %v, want %v", got, want)
	}
	for _, id := range []string{a, b} {
		if n := len(teststack.Facts(t, inv.sessions, id)); n != 2 {
			t.Fatalf("a failed wake wrote facts: %d", n)
		}
	}
	// Redelivered to a live invocation, they run.
	resp, err = s.fresh(agent).worker.HandleSQS(ctxT(t), events.SQSEvent{Records: []events.SQSMessage{ev.Records[0], ev.Records[2]}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %+v, %v", resp, err)
	}
	for _, id := range []string{a, b} {
		if st := teststack.Load(t, inv.sessions, id); st.Turns != 1 {
			t.Fatalf("redelivered wake for %s did not run: %+v", id, st)
		}
	}
}

// A wake that arrives before a fault suspension's delayed wake is due (a
// message's) leaves the turn suspended: resuming it early would spend one of
// the turn's fault suspensions on a model that is likely still down.
func TestEarlyWakeLeavesAFaultSuspensionAlone(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	inv := s.fresh(agent)
	id := newSession(t, inv, "demo", "Go.")
	st := teststack.Load(t, inv.sessions, id)
	now := inv.sessions.Clock()
	actor := reducer.Actor{Kind: reducer.ActorAgent, ID: "turn_f"}
	st, err := inv.sessions.Append(ctx, id, st,
		reducer.Fact{Type: reducer.TurnStarted, Actor: actor, Turn: "turn_f", Stream: "turn_f", Lease: now.Add(time.Minute)},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: actor, Turn: "turn_f", Cause: reducer.CauseThrottled,
			Faults: 2, Wake: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inv.sessions.Post(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, "Still there?"); err != nil {
		t.Fatal(err)
	}
	res, err := inv.worker.Handle(ctx, wake.Wake{Session: id, Reason: wake.Message, Seq: st.LastSeq + 1})
	if err != nil || res.Runs != 0 {
		t.Fatalf("early wake: %+v, %v; want no run", res, err)
	}
	after := teststack.Load(t, inv.sessions, id)
	if after.Status != reducer.Suspended || after.Turn.Faults != 2 || count(teststack.Facts(t, inv.sessions, id), reducer.TurnResumed) != 0 {
		t.Fatalf("after the early wake: %+v", after)
	}
}
