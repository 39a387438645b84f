package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

const threeSteps = `{"steps":[
 {"text":"Let me check the weather in Paris.","toolCalls":[{"name":"get_weather","input":{"city":"Paris"}}]},
 {"reasoning":"Now the docs.","text":"And the runbook.","toolCalls":[{"name":"search_docs","input":{"query":"rain plan"}},{"name":"get_weather","input":{"city":"Oslo"}}]},
 {"text":"Paris is clear at 15C and the rain plan is in the runbook."}
]}`

func TestThreeStepTurnCompletes(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	inv := fresh(t, demoAgent(t, script(t, threeSteps), turn.Limits{}))
	id := newSession(t, inv, "What is the weather?")

	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Completed || out.Steps != 3 || out.Usage.Steps != 3 {
		t.Fatalf("outcome = %+v, want completed after 3 steps", out)
	}

	fs := facts(t, inv, id)
	want := []reducer.Type{reducer.SessionCreated, reducer.MessageReceived, reducer.TurnStarted, reducer.TurnCompleted}
	if got := types(fs); !reflect.DeepEqual(got, want) {
		t.Fatalf("facts = %v, want %v", got, want)
	}
	done := fs[3]
	if done.Turn != out.Turn || done.Snapshot == "" || done.Usage == nil || done.Usage.Steps != 3 || done.Actor.Kind != reducer.ActorAgent {
		t.Fatalf("turn.completed = %+v", done)
	}

	ps, closed := readParts(t, inv, id, out.Turn)
	if closed != streams.Completed {
		t.Fatalf("stream closed = %q, want completed", closed)
	}
	var seq []string
	for _, p := range ps {
		switch p.Type {
		case parts.Start, parts.StartStep, parts.FinishStep, parts.Finish:
			seq = append(seq, string(p.Type))
		case parts.ToolInputAvailable:
			seq = append(seq, "call:"+p.ToolName)
		case parts.ToolOutputAvailable:
			seq = append(seq, "result:"+p.ToolCallID)
		}
	}
	wantSeq := "start start-step call:get_weather finish-step result:" + turn.CallID(out.Turn, 0, 0) + " " +
		"start-step call:search_docs call:get_weather finish-step result:" + turn.CallID(out.Turn, 1, 0) + " result:" + turn.CallID(out.Turn, 1, 1) + " " +
		"start-step finish-step finish"
	if got := strings.Join(seq, " "); got != wantSeq {
		t.Fatalf("stream:\n got %s\nwant %s", got, wantSeq)
	}
	var text strings.Builder
	for _, p := range ps {
		if p.Type == parts.TextDelta {
			text.WriteString(p.Delta)
		}
	}
	if !strings.Contains(text.String(), "Paris is clear at 15C") {
		t.Fatalf("streamed text %q lacks the answer", text.String())
	}
	var weather map[string]any
	for _, p := range ps {
		if p.Type == parts.ToolOutputAvailable && p.ToolCallID == turn.CallID(out.Turn, 0, 0) {
			if err := json.Unmarshal(p.Output, &weather); err != nil {
				t.Fatal(err)
			}
		}
	}
	if weather["city"] != "Paris" {
		t.Fatalf("weather output = %v", weather)
	}

	// The session is idle again and a second Start has nothing to answer.
	if _, err := inv.runner.Start(ctx, id); !errors.Is(err, turn.ErrNotIdle) {
		t.Fatalf("second Start err = %v, want ErrNotIdle", err)
	}
}

// fiveSteps takes 200 ms a step.
const fiveSteps = `{"steps":[
 {"delay":"200ms","text":"one","toolCalls":[{"name":"get_weather","input":{"city":"A"}}]},
 {"delay":"200ms","text":"two","toolCalls":[{"name":"get_weather","input":{"city":"BB"}}]},
 {"delay":"200ms","text":"three","toolCalls":[{"name":"get_weather","input":{"city":"CCC"}}]},
 {"delay":"200ms","text":"four","toolCalls":[{"name":"get_weather","input":{"city":"DDDD"}}]},
 {"delay":"200ms","text":"five","toolCalls":[{"name":"search_docs","input":{"query":"e"}}]},
 {"delay":"200ms","text":"six and done"}
]}`

func TestDeadlineSuspendsAndResumesByteForByte(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	lim := turn.Limits{Budget: time.Second, Margin: 100 * time.Millisecond}
	m := script(t, fiveSteps)
	first := fresh(t, demoAgent(t, m, lim))
	id := newSession(t, first, "Count to six.")
	drainWakes(t, first)

	out, err := first.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Suspended || out.Cause != reducer.CauseBudget {
		t.Fatalf("first invocation = %+v, want suspended for budget", out)
	}
	if out.Steps < 2 || out.Steps > 4 {
		t.Fatalf("first invocation ran %d steps of 200 ms in a 1 s budget", out.Steps)
	}
	if w := receiveWake(t, first, id); w.Session != id || w.Reason != "budget" {
		t.Fatalf("wake = %+v", w)
	}

	total := out.Steps
	invocations := 1
	for out.Kind == turn.Suspended {
		inv := fresh(t, demoAgent(t, script(t, fiveSteps), lim)) // nothing shared in memory
		out, err = inv.runner.Resume(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		total += out.Steps
		invocations++
		if invocations > 6 {
			t.Fatal("the turn never completed")
		}
	}
	if out.Kind != turn.Completed || total != 6 || out.Usage.Steps != 6 {
		t.Fatalf("final = %+v after %d steps, want completed after 6", out, total)
	}
	if invocations < 2 {
		t.Fatal("the turn never suspended")
	}

	// An uninterrupted run of the same script.
	whole := fresh(t, demoAgent(t, m.WithDelay(0), turn.Limits{}))
	other := newSession(t, whole, "Count to six.")
	wout, err := whole.runner.Start(ctx, other)
	if err != nil || wout.Kind != turn.Completed {
		t.Fatalf("uninterrupted run: %+v, %v", wout, err)
	}

	a, b := transcript(t, fresh(t, demoAgent(t, m, lim)), id), transcript(t, whole, other)
	if !bytes.Equal(a, b) {
		t.Fatalf("rebuilt conversations differ:\n%s\n%s", a, b)
	}
	// Rebuilding twice gives the same bytes.
	if again := transcript(t, fresh(t, demoAgent(t, m, lim)), id); !bytes.Equal(a, again) {
		t.Fatal("two rebuilds of one session differ")
	}

	pa, _ := readParts(t, whole, id, out.Turn)
	pb, _ := readParts(t, whole, other, wout.Turn)
	if ca, cb := mergeDeltas(content(pa)), mergeDeltas(content(pb)); !reflect.DeepEqual(ca, cb) {
		ja, _ := json.Marshal(ca)
		jb, _ := json.Marshal(cb)
		t.Fatalf("streams differ beyond markers:\n%s\n%s", ja, jb)
	}
	markers := 0
	for _, p := range pa {
		if p.Type == parts.DataSuspended || p.Type == parts.DataResumed {
			markers++
		}
	}
	if markers != 2*(invocations-1) {
		t.Fatalf("%d suspension/resumption markers for %d invocations", markers, invocations)
	}
}

const approvalScript = `{"steps":[
 {"text":"I will email the team.","toolCalls":[{"name":"send_email","input":{"to":"team@example.com","subject":"Status"}}]},
 {"text":"Done."}
]}`

func suspendOnApproval(t *testing.T) (*invocation, string, reducer.Approval) {
	t.Helper()
	ctx := ctxT(t)
	inv := fresh(t, demoAgent(t, script(t, approvalScript), turn.Limits{}))
	id := newSession(t, inv, "Email the team.")
	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Suspended || out.Cause != reducer.CauseApproval {
		t.Fatalf("outcome = %+v, want suspended for approval", out)
	}
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.State.Status != reducer.Suspended || len(sess.State.Turn.Pending) != 1 {
		t.Fatalf("state = %+v", sess.State)
	}
	ap := sess.State.Turn.Pending[0]
	if ap.Tool != "send_email" || !strings.Contains(string(ap.Input), "team@example.com") || !ap.Expires.After(time.Now()) {
		t.Fatalf("pending approval = %+v", ap)
	}
	ps, closed := readParts(t, inv, id, out.Turn)
	if closed != streams.Open || ps[len(ps)-1].Type != parts.DataSuspended {
		t.Fatalf("stream after approval suspension: closed=%q last=%+v", closed, ps[len(ps)-1])
	}
	// Resume before an answer does nothing.
	if _, err := inv.runner.Resume(ctx, id); !errors.Is(err, turn.ErrNotResumable) {
		t.Fatalf("Resume before answer: %v", err)
	}
	return inv, id, ap
}

var operator = reducer.Actor{Kind: reducer.ActorOperator, ID: "bob"}

func TestApprovalApproveRunsTool(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	inv, id, ap := suspendOnApproval(t)
	before := len(facts(t, inv, id))

	// A wrong approval id is refused and writes nothing.
	if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: "ap_nope", Decision: reducer.Approve, Reason: ""}); !errors.Is(err, session.ErrNotPending) {
		t.Fatalf("wrong id: %v", err)
	}
	if n := len(facts(t, inv, id)); n != before {
		t.Fatalf("wrong id wrote %d facts", n-before)
	}
	if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: ap.ID, Decision: reducer.Approve, Reason: "looks fine"}); err != nil {
		t.Fatal(err)
	}
	// A second answer is refused and writes nothing.
	after := len(facts(t, inv, id))
	if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: ap.ID, Decision: reducer.Deny, Reason: ""}); !errors.Is(err, session.ErrNotPending) {
		t.Fatalf("second answer: %v", err)
	}
	if n := len(facts(t, inv, id)); n != after {
		t.Fatalf("second answer wrote %d facts", n-after)
	}

	out, err := fresh(t, demoAgent(t, script(t, approvalScript), turn.Limits{})).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume after approve: %+v, %v", out, err)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	var sawResponse, sawOutput bool
	for _, p := range ps {
		if p.Type == parts.ToolApprovalResponse && p.ApprovalID == ap.ID && p.Approved != nil && *p.Approved {
			sawResponse = true
		}
		if p.Type == parts.ToolOutputAvailable && p.ToolCallID == ap.ToolCallID && strings.Contains(string(p.Output), `"sent":true`) {
			sawOutput = true
		}
	}
	if !sawResponse || !sawOutput {
		t.Fatalf("approved tool: response=%v output=%v", sawResponse, sawOutput)
	}
	fs := facts(t, inv, id)
	// send_email is external: the ledger records its start before it runs.
	want := []reducer.Type{reducer.ApprovalRequested, reducer.TurnSuspended, reducer.ApprovalAnswered, reducer.TurnResumed, reducer.ExecutionStarted, reducer.TurnCompleted}
	if got := types(fs[3:]); !reflect.DeepEqual(got, want) {
		t.Fatalf("facts = %v, want …%v", types(fs), want)
	}
	if fs[5].Actor != operator || fs[5].Answer.Decision != reducer.Approve {
		t.Fatalf("answer fact = %+v", fs[5])
	}
}

func TestApprovalDenyTellsTheModel(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	inv, id, ap := suspendOnApproval(t)
	if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: ap.ID, Decision: reducer.Deny, Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	out, err := fresh(t, demoAgent(t, script(t, approvalScript), turn.Limits{})).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume after deny: %+v, %v", out, err)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	for _, p := range ps {
		if p.Type == parts.ToolOutputAvailable && p.ToolCallID == ap.ToolCallID {
			t.Fatal("a denied tool ran")
		}
	}
	// The model's input holds the denial as the call's result, under the
	// id the model gave the call.
	var msgs []struct {
		Role    string `json:"role"`
		Content []struct {
			Type       string          `json:"type"`
			ToolCallID string          `json:"toolCallId"`
			ToolName   string          `json:"toolName"`
			Output     json.RawMessage `json:"output"`
			IsError    bool            `json:"isError"`
		} `json:"content"`
	}
	if err := json.Unmarshal(transcript(t, inv, id), &msgs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range msgs {
		for _, c := range m.Content {
			if m.Role == "tool" && c.ToolCallID == "call_0_0" && c.ToolName == "send_email" && c.IsError && strings.Contains(string(c.Output), "denied") {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("no denial in the conversation: %+v", msgs)
	}
}

// race runs f from n goroutines at once and returns their errors.
func race(n int, f func() error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f()
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

func TestRaceStart(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	id := newSession(t, fresh(t, agent), "Race me.")
	var mu sync.Mutex
	var won []turn.Outcome
	errs := race(20, func() error {
		out, err := fresh(t, agent).runner.Start(ctx, id)
		if err == nil {
			mu.Lock()
			won = append(won, out)
			mu.Unlock()
		}
		return err
	})
	for _, err := range errs {
		if err != nil && !errors.Is(err, turn.ErrLost) && !errors.Is(err, turn.ErrNotIdle) {
			t.Fatalf("unexpected error: %v", err)
		}
	}
	inv := fresh(t, agent)
	fs := facts(t, inv, id)
	if n := count(fs, reducer.TurnStarted); n != 1 || len(won) != 1 {
		t.Fatalf("%d turn.started facts and %d winners, want 1 and 1", n, len(won))
	}
	infos, err := inv.sessions.Streams(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range infos {
		if s.ID != won[0].Turn && s.Closed == streams.Open {
			t.Fatalf("orphan open stream %s", s.ID)
		}
	}
	if len(infos) != 1 || infos[0].Closed != streams.Completed {
		t.Fatalf("streams = %+v, want only the winner's, completed", infos)
	}
}

// raceResumeScript's second step is slow, so the winning resume is still
// running while every racer has tried: a racer that came late cannot find a
// fresh suspension to resume.
const raceResumeScript = `{"steps":[
 {"text":"one","toolCalls":[{"name":"get_weather","input":{"city":"Graz"}}]},
 {"delay":"1500ms","text":"two","toolCalls":[{"name":"get_weather","input":{"city":"Linz"}}]},
 {"text":"done"}
]}`

func TestRaceResume(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	lim := turn.Limits{MaxStepsPerInvocation: 1}
	agent := demoAgent(t, script(t, raceResumeScript), lim)
	inv := fresh(t, agent)
	id := newSession(t, inv, "Race me.")
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Suspended {
		t.Fatalf("start: %+v %v", out, err)
	}
	before := count(facts(t, inv, id), reducer.TurnResumed)
	wins := 0
	var mu sync.Mutex
	errs := race(20, func() error {
		_, err := fresh(t, agent).runner.Resume(ctx, id)
		if err == nil {
			mu.Lock()
			wins++
			mu.Unlock()
		}
		return err
	})
	for _, err := range errs {
		if err != nil && !errors.Is(err, turn.ErrLost) && !errors.Is(err, turn.ErrNotResumable) {
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if n := count(facts(t, inv, id), reducer.TurnResumed) - before; n != 1 || wins != 1 {
		t.Fatalf("%d turn.resumed facts and %d winners, want 1 and 1", n, wins)
	}
}

func TestRaceAnswer(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	inv, id, ap := suspendOnApproval(t)
	errs := race(20, func() error {
		return fresh(t, demoAgent(t, script(t, approvalScript), turn.Limits{})).sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: ap.ID, Decision: reducer.Approve, Reason: ""})
	})
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, session.ErrNotPending), errors.Is(err, session.ErrConflict):
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if n := count(facts(t, inv, id), reducer.ApprovalAnswered); n != 1 || ok != 1 {
		t.Fatalf("%d approval.answered facts and %d successes, want 1 and 1", n, ok)
	}
}

const slowThree = `{"steps":[
 {"delay":"300ms","text":"first","toolCalls":[{"name":"get_weather","input":{"city":"Rome"}}]},
 {"delay":"300ms","text":"second","toolCalls":[{"name":"get_weather","input":{"city":"Lima"}}]},
 {"delay":"300ms","text":"third and final"}
]}`

func TestCrashMidStepResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	lim := turn.Limits{Budget: 5 * time.Second, Margin: 100 * time.Millisecond, LeaseGrace: 50 * time.Millisecond}
	// Die in the middle of the second step: 150 ms into its 300 ms.
	dying, kill := context.WithCancel(context.Background())
	calls := 0
	killer := modelFunc(func(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
		if calls++; calls == 2 {
			time.AfterFunc(150*time.Millisecond, kill)
		}
		return script(t, slowThree).Stream(ctx, req)
	})
	agent := demoAgent(t, killer, lim)
	inv := fresh(t, agent)
	id := newSession(t, inv, "Go.")
	out, err := inv.runner.Start(dying, id)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("killed invocation: %+v, %v", out, err)
	}
	ctx := ctxT(t)
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.State.Status != reducer.Running {
		t.Fatalf("after the crash the session is %s, want still running", sess.State.Status)
	}
	ps, _ := readParts(t, inv, id, sess.State.Turn.Stream)
	steps := 0
	for _, p := range ps {
		if p.Type == parts.FinishStep {
			steps++
		}
	}
	if steps != 1 {
		t.Fatalf("checkpoint holds %d steps, want 1", steps)
	}
	// The lease still holds: nobody may take over yet.
	if _, err := fresh(t, demoAgent(t, script(t, slowThree), lim)).runner.Resume(ctx, id); !errors.Is(err, turn.ErrNotResumable) {
		t.Fatalf("resume under a live lease: %v", err)
	}
	pass(t, sess.State.Turn.Lease.Add(10*time.Millisecond))
	out, err = fresh(t, demoAgent(t, script(t, slowThree), lim)).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed || out.Steps != 2 || out.Usage.Steps != 3 {
		t.Fatalf("resume after crash: %+v, %v", out, err)
	}
	// No step lost, none duplicated.
	var msgs []struct {
		Role string `json:"role"`
	}
	if err := json.Unmarshal(transcript(t, inv, id), &msgs); err != nil {
		t.Fatal(err)
	}
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = m.Role
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool,assistant,tool,assistant" {
		t.Fatalf("conversation roles = %s", got)
	}
}

func drainWakes(t testing.TB, inv *invocation) {
	t.Helper()
	if inv.clients == nil {
		stackOf(t).mem.Wakes.Drain()
		return
	}
	for {
		out, err := inv.clients.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(env.QueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return
		}
		for _, m := range out.Messages {
			_, _ = inv.clients.SQS.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(env.QueueURL), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// receiveWake takes the next wake for session id off the package's shared
// queue. Wakes of other tests' sessions (a delayed one may come due at any
// time) are deleted and skipped.
func receiveWake(t testing.TB, inv *invocation, id string) wake.Wake {
	t.Helper()
	if inv.clients == nil {
		w, ok := stackOf(t).mem.Wakes.Take(id)
		if !ok {
			t.Fatalf("no wake for %s on the queue", id)
		}
		return w.Wake
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		out, err := inv.clients.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(env.QueueURL), MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			_, _ = inv.clients.SQS.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(env.QueueURL), ReceiptHandle: m.ReceiptHandle})
			w, err := wake.Parse(aws.ToString(m.Body))
			if err != nil {
				t.Fatal(err)
			}
			if w.Session == id {
				return w
			}
		}
	}
	t.Fatalf("no wake for %s on the queue", id)
	return wake.Wake{}
}

// visibleWakes counts the visible wakes for session id on the package's
// shared queue. It looks without taking: every message it receives is made
// visible again at once, so another test's delayed wake that comes due is
// neither counted nor lost.
func visibleWakes(t testing.TB, inv *invocation, id string) int {
	t.Helper()
	if inv.clients == nil {
		return len(stackOf(t).mem.Wakes.Due(id))
	}
	n := 0
	for range 3 {
		out, err := inv.clients.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(env.QueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			// A zero VisibilityTimeout on the receive is the SDK's "unset";
			// the message is made visible again explicitly.
			if _, err := inv.clients.SQS.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(env.QueueURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
				t.Fatal(err)
			}
			if w, err := wake.Parse(aws.ToString(m.Body)); err == nil && w.Session == id {
				n++
			}
		}
		if n > 0 {
			return n
		}
	}
	return 0
}

const liveScript = `{"steps":[
 {"delay":"800ms","text":"one two three four five six seven eight","toolCalls":[{"name":"get_weather","input":{"city":"Nice"}}]},
 {"delay":"800ms","text":"the answer is sunny"}
]}`

func TestLiveFlushStreamsMidStepAndAbandonsOnCrash(t *testing.T) {
	t.Parallel()
	lim := turn.Limits{Budget: 2500 * time.Millisecond, Margin: 100 * time.Millisecond, LeaseGrace: 10 * time.Millisecond, LiveFlush: 50 * time.Millisecond}
	agent := demoAgent(t, script(t, liveScript), lim)
	inv := fresh(t, agent)
	id := newSession(t, inv, "Live.")
	dying, kill := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := inv.runner.Start(dying, id)
		done <- err
	}()
	// Mid-step, a reader already sees the first words.
	time.Sleep(400 * time.Millisecond)
	ctx := ctxT(t)
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := readParts(t, inv, id, sess.State.Turn.Stream)
	var text strings.Builder
	for _, p := range ps {
		if p.Type == parts.TextDelta {
			text.WriteString(p.Delta)
		}
		if p.Type == parts.FinishStep {
			t.Fatal("the step finished before the reader looked")
		}
	}
	if !strings.HasPrefix(text.String(), "one") {
		t.Fatalf("mid-step the stream holds %q, want the first words", text.String())
	}
	kill() // the process dies mid-step
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("killed run: %v", err)
	}
	pass(t, sess.State.Turn.Lease.Add(20*time.Millisecond))
	out, err := fresh(t, agent).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed || out.Usage.Steps != 2 {
		t.Fatalf("resume: %+v %v", out, err)
	}
	ps, _ = readParts(t, inv, id, out.Turn)
	abandoned := 0
	for _, p := range ps {
		if p.Type == parts.DataAbandoned {
			abandoned++
		}
	}
	if abandoned != 1 {
		t.Fatalf("%d data-abandoned parts, want 1", abandoned)
	}
	// The partial step is not in the conversation; the redone one is, once.
	var msgs []struct {
		Role string `json:"role"`
	}
	if err := json.Unmarshal(transcript(t, inv, id), &msgs); err != nil {
		t.Fatal(err)
	}
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = m.Role
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool,assistant" {
		t.Fatalf("roles = %s", got)
	}
}

// A step that would run past the deadline is aborted by the hard context
// deadline: the turn suspends for its budget with the last checkpoint
// standing, and the next invocation redoes the step.
func TestRunawayStepIsAbortedAtTheDeadline(t *testing.T) {
	t.Parallel()
	const runaway = `{"steps":[{"delay":"5s","text":"far too slow"}]}`
	lim := turn.Limits{Budget: 600 * time.Millisecond, Margin: 100 * time.Millisecond}
	inv := fresh(t, demoAgent(t, script(t, runaway), lim))
	id := newSession(t, inv, "Take your time.")
	out, err := inv.runner.Start(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Suspended || out.Cause != reducer.CauseBudget || out.Steps != 0 {
		t.Fatalf("outcome = %+v, want suspended for budget after no step", out)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	for _, p := range ps {
		if p.Type == parts.StartStep || p.Type == parts.TextDelta {
			t.Fatalf("the aborted step reached the stream: %+v", p)
		}
	}
	sess, err := inv.sessions.Load(ctxT(t), id)
	if err != nil || sess.State.Status != reducer.Suspended {
		t.Fatalf("state = %+v, %v", sess, err)
	}
}

// A turn that never makes progress — every step outlasts the budget — is
// failed once it has been resumed too often, instead of waking forever.
func TestTurnWithoutProgressFailsAtTheInvocationCap(t *testing.T) {
	t.Parallel()
	const runaway = `{"steps":[{"delay":"5s","text":"far too slow"}]}`
	lim := turn.Limits{Budget: 200 * time.Millisecond, Margin: 50 * time.Millisecond, MaxInvocationsPerTurn: 3}
	agent := demoAgent(t, script(t, runaway), lim)
	id := newSession(t, fresh(t, agent), "Take your time.")
	ctx := ctxT(t)
	out, err := fresh(t, agent).runner.Start(ctx, id)
	for i := 0; err == nil && out.Kind == turn.Suspended && i < 10; i++ {
		out, err = fresh(t, agent).runner.Resume(ctx, id)
	}
	if err != nil || out.Kind != turn.Failed || out.Failure == nil || out.Failure.Kind != reducer.FailLimit {
		t.Fatalf("outcome = %+v, %v; want failed at the limit", out, err)
	}
	fs := facts(t, fresh(t, agent), id)
	if n := count(fs, reducer.TurnResumed); n != 3 {
		t.Fatalf("%d resumes before failing, want 3", n)
	}
}

// An invocation that closed its stream as completed and died before
// recording the outcome leaves a running turn with a closed stream; the next
// Resume records the completion instead of running anything again.
func TestResumeRecordsTheOutcomeOfAClosedStream(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	inv := fresh(t, agent)
	id := newSession(t, inv, "Hi.")
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	tid := "turn_closed0000000000000000000"
	if _, err := inv.sessions.Append(ctx, id, sess.State, reducer.Fact{Type: reducer.TurnStarted,
		Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: tid}, Turn: tid, Stream: tid, Lease: inv.sessions.Clock().Add(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	sink := inv.sessions.OpenStream(id, tid)
	_ = sink.Append(
		parts.Part{Type: parts.Start, MessageID: tid},
		parts.Part{Type: parts.StartStep},
		parts.Part{Type: parts.TextStart, ID: "a"},
		parts.Part{Type: parts.TextDelta, ID: "a", Delta: "All done."},
		parts.Part{Type: parts.TextEnd, ID: "a"},
		parts.Part{Type: parts.FinishStep},
		parts.Part{Type: parts.Finish, FinishReason: "stop"},
	)
	if err := sink.Close(ctx, streams.Completed); err != nil {
		t.Fatal(err)
	}
	wait(t, 100*time.Millisecond) // the dead invocation's lease runs out
	out, err := fresh(t, agent).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed || out.Steps != 0 {
		t.Fatalf("resume: %+v %v", out, err)
	}
	fs := facts(t, inv, id)
	if last := fs[len(fs)-1]; last.Type != reducer.TurnCompleted || last.Snapshot == "" {
		t.Fatalf("last fact = %+v", last)
	}
	if tr := string(transcript(t, inv, id)); !strings.Contains(tr, "All done.") {
		t.Fatalf("the snapshot lacks the turn: %s", tr)
	}
	if ps, _ := readParts(t, inv, id, tid); len(ps) != 7 {
		t.Fatalf("the closed stream changed: %d parts", len(ps))
	}
}

// An operator cancels a turn while its invocation is mid-run: the runner
// stops at its next write, and the stream ends closed as cancelled. The
// step whose model call ran as the turn was cancelled is billed but never
// reached the stream: the runner records its usage after the cancel.
func TestCancelWhileRunning(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent := demoAgent(t, script(t, slowThree), turn.Limits{})
	inv := fresh(t, agent)
	id := newSession(t, inv, "Go slowly.")
	done := make(chan turn.Outcome, 1)
	go func() {
		out, err := inv.runner.Start(ctx, id)
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	time.Sleep(450 * time.Millisecond) // into the second step
	if err := fresh(t, agent).sessions.Cancel(ctx, id, operator, "stop"); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.Kind != turn.Superseded {
		t.Fatalf("runner outcome = %+v, want superseded", out)
	}
	fs := facts(t, inv, id)
	last := fs[len(fs)-1]
	if last.Type == reducer.UsageRecorded {
		if last.Turn != out.Turn || last.Actor.Kind != reducer.ActorAgent || last.Usage == nil || last.Usage.Steps != 1 {
			t.Fatalf("usage.recorded after the cancel = %+v (usage %+v), want the agent's, of one step", last, last.Usage)
		}
		last = fs[len(fs)-2]
	}
	if last.Type != reducer.TurnCancelled || last.Actor != operator {
		t.Fatalf("the cancel fact = %+v", last)
	}
	ps, closed := readParts(t, inv, id, out.Turn)
	if closed != streams.Cancelled {
		t.Fatalf("stream closed = %q, want cancelled", closed)
	}
	if last := ps[len(ps)-1]; last.Type != parts.Finish || last.FinishReason != "cancelled" {
		t.Fatalf("last part = %+v", last)
	}
}

// modelFunc is a model.Model of a function.
type modelFunc func(ctx context.Context, req model.Request) iter.Seq2[model.Event, error]

func (f modelFunc) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	return f(ctx, req)
}
