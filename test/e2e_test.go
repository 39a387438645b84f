package test

// End-to-end tests through the real bootstrap binaries: the operator, resume
// and tick functions are built as provided.al2023 bootstraps (for the host)
// and run as processes against kumo's Lambda Runtime API. The operator API is
// reached through kumo's API Gateway (HTTP API, JWT authorizer); the test
// does what AWS would otherwise do itself: it pumps the wake queue into the
// resume function as SQS events and fires the tick with EventBridge
// scheduled events. See stack_test.go.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/test/harness"
)

func e2eStack(t *testing.T) (*stack, script) {
	t.Helper()
	s := newStack(t, stackConfig{agents: testdataPath(t, "agents.json")})
	return s, loadScript(t, testdataPath(t, "e2e.script.json"))
}

// turnOf returns the id of the session's only turn, from its facts.
func turnOf(t *testing.T, facts []reducer.Fact) string {
	t.Helper()
	started := ofType(facts, reducer.TurnStarted)
	if len(started) != 1 {
		t.Fatalf("%d turn.started facts, want 1: %s", len(started), summary(facts))
	}
	return started[0].Turn
}

// checkApprovedTurn asserts the facts of a completed e2e turn whose one
// approval alice approved.
func checkApprovedTurn(t *testing.T, facts []reducer.Fact, approvalID string) {
	t.Helper()
	if len(facts) < 3 || facts[0].Type != reducer.SessionCreated || facts[0].Owner != alice ||
		facts[1].Type != reducer.MessageReceived || facts[2].Type != reducer.TurnStarted {
		t.Errorf("facts begin %s, want session.created (alice), message.received, turn.started", summary(facts[:min(3, len(facts))]))
	}
	for i, f := range facts {
		if f.Seq != int64(i+1) {
			t.Errorf("fact %d has seq %d: seqs are not dense", i, f.Seq)
		}
	}
	if last := facts[len(facts)-1]; last.Type != reducer.TurnCompleted {
		t.Errorf("last fact %s, want turn.completed", last.Type)
	}
	for typ, want := range map[reducer.Type]int{
		reducer.TurnStarted: 1, reducer.ApprovalRequested: 1, reducer.ApprovalAnswered: 1,
		reducer.ExecutionStarted: 1, reducer.TurnCompleted: 1,
	} {
		if got := len(ofType(facts, typ)); got != want {
			t.Errorf("%d %s facts, want %d", got, typ, want)
		}
	}
	if n := len(suspended(facts, reducer.CauseApproval)); n != 1 {
		t.Errorf("%d approval suspensions, want 1", n)
	}
	var reqAt, suspAt, ansAt int64
	for _, f := range facts {
		switch {
		case f.Type == reducer.ApprovalRequested:
			reqAt = f.Seq
			if f.Approval == nil || f.Approval.ID != approvalID || f.Approval.Tool != "send_email" {
				t.Errorf("approval.requested %+v, want %s for send_email", f.Approval, approvalID)
			}
		case f.Type == reducer.TurnSuspended && f.Cause == reducer.CauseApproval:
			suspAt = f.Seq
		case f.Type == reducer.ApprovalAnswered:
			ansAt = f.Seq
			if f.Answer == nil || f.Answer.ApprovalID != approvalID || f.Answer.Decision != reducer.Approve ||
				f.Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: alice}) {
				t.Errorf("approval.answered %+v by %+v, want approve of %s by operator alice", f.Answer, f.Actor, approvalID)
			}
		case f.Type == reducer.ExecutionStarted:
			if f.Execution == nil || f.Execution.Tool != "send_email" {
				t.Errorf("execution.started %+v", f.Execution)
			}
		}
	}
	if reqAt >= suspAt || suspAt >= ansAt {
		t.Errorf("approval requested at %d, suspended at %d, answered at %d: out of order", reqAt, suspAt, ansAt)
	}
	checkResumes(t, facts)
}

// TestEndToEnd runs a turn of the e2e agent through everything: a session
// and a message through API Gateway, the turn suspending on its budget, its
// SQS wake resuming it, the approval seen and answered through the API, and
// the completed stream read back through the API.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	s, sc := e2eStack(t)
	id := s.createSession(alice, "e2e")
	began := time.Now()
	s.post(alice, id, "Give the team a status update for Lisbon.")

	ap := s.waitPending(alice, id, 20*time.Second)
	t.Logf("pending after %v: %s %s for call %s, input %s, expires %s", time.Since(began).Round(time.Millisecond),
		ap.ApprovalID, ap.Tool, ap.ToolCallID, ap.Input, ap.Expires.Format(time.RFC3339Nano))
	if ap.ApprovalID == "" || ap.Tool != "send_email" || ap.ToolCallID == "" || !strings.Contains(string(ap.Input), "team@example.com") {
		t.Errorf("pending approval %+v", ap)
	}
	if ap.Expires.IsZero() || ap.Expires.Before(time.Now().Add(-time.Minute)) {
		t.Errorf("pending approval expires %v", ap.Expires)
	}
	// Before the answer: the turn suspended on its budget and was resumed.
	mid := s.facts(alice, id)
	if len(suspended(mid, reducer.CauseBudget)) == 0 || len(ofType(mid, reducer.TurnResumed)) == 0 {
		t.Fatalf("no budget suspension and resume before the approval: %s", summary(mid))
	}

	s.answer(alice, id, ap.ApprovalID, "approve")
	s.waitCompleted(id, 20*time.Second)
	took := time.Since(began)

	facts := s.facts(alice, id)
	t.Logf("facts: %s", summary(facts))
	checkApprovedTurn(t, facts, ap.ApprovalID)
	budget := suspended(facts, reducer.CauseBudget)
	if len(budget) == 0 {
		t.Errorf("no turn.suspended{budget}")
	}
	for _, typ := range []reducer.Type{reducer.TurnResumed, reducer.ApprovalRequested, reducer.ApprovalAnswered, reducer.TurnCompleted} {
		if len(ofType(facts, typ)) == 0 {
			t.Errorf("no %s fact", typ)
		}
	}
	// Every wake went through SQS: the message, each budget suspension, and
	// the answer.
	want := []string{"message"}
	for range budget {
		want = append(want, "budget")
	}
	want = append(want, "approval")
	if got := s.pump.reasons(id); !slices.Equal(got, want) {
		t.Errorf("wakes handled %v, want %v", got, want)
	}

	turn := turnOf(t, facts)
	ps, closed := s.readStream(alice, id, turn, 10*time.Second)
	if closed != streams.Completed {
		t.Errorf("stream closed %q, want completed", closed)
	}
	checkTranscript(t, ps, sc, outcome{approved: true})
	if n := countParts(ps, parts.DataSuspended); n != len(budget)+1 {
		t.Errorf("%d data-suspended parts, want %d (budget) + 1 (approval)", n, len(budget))
	}
	if n := countParts(ps, parts.DataResumed); n != len(budget)+1 {
		t.Errorf("%d data-resumed parts, want %d", n, len(budget)+1)
	}

	sess := s.session(alice, id)
	if sess.Status != reducer.Idle || sess.Turn != nil || len(sess.Pending) != 0 || sess.Turns != 1 || sess.Last != reducer.TurnCompleted {
		t.Errorf("session after the turn: %+v", sess)
	}
	var list api.List
	s.must(http.StatusOK, "GET", "/sessions", alice, "", &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != id {
		t.Errorf("alice's sessions: %+v", list)
	}
	if errs := s.logsMatching(`"level":"ERROR"`); len(errs) > 0 {
		t.Errorf("functions logged errors:\n%s", strings.Join(errs, "\n"))
	}
	t.Logf("turn of %d steps in %d invocations (%d budget suspensions), %v from message to completion; %d parts; usage %+v",
		len(sc.Steps), len(ofType(facts, reducer.TurnStarted))+len(ofType(facts, reducer.TurnResumed)),
		len(budget), took.Round(time.Millisecond), len(ps), sess.Usage)
}

// TestReaperAfterSIGKILL kills the resume process after the turn's first
// checkpoint, and lets the tick reap the turn once its lease has run out. A
// fresh resume process finishes it from the checkpoint, with every step of
// the script in the stream exactly once.
func TestReaperAfterSIGKILL(t *testing.T) {
	t.Parallel()
	s, sc := e2eStack(t)
	id := s.createSession(alice, "e2e")
	s.post(alice, id, "Give the team a status update for Lisbon.")

	facts := s.waitFacts(id, "turn.started", 10*time.Second, func(fs []reducer.Fact) bool {
		return len(ofType(fs, reducer.TurnStarted)) > 0
	})
	started := ofType(facts, reducer.TurnStarted)[0]

	// The first checkpoint: a finish-step in the durable stream.
	var durable []parts.Part
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := s.store.ReadStream(s.ctx, id, started.Stream, "")
		if err != nil {
			t.Fatal(err)
		}
		durable = durable[:0]
		for _, e := range page.Entries {
			durable = append(durable, e.Part)
		}
		if countParts(durable, parts.FinishStep) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after 10s: %d parts", len(durable))
		}
		time.Sleep(10 * time.Millisecond)
	}
	victim := s.resume.Load()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	facts, err := s.store.Facts(s.ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := facts[len(facts)-1]; last.Type != reducer.TurnStarted {
		t.Fatalf("killed too late: the turn had moved on to %s: %s", last.Type, summary(facts))
	}
	t.Logf("SIGKILLed %s with %d step(s) checkpointed (%d parts); lease runs out at %s (in %v)",
		victim.Name, countParts(durable, parts.FinishStep), len(durable),
		started.Lease.Format(time.RFC3339Nano), time.Until(started.Lease).Round(time.Millisecond))

	// A fresh execution environment, as Lambda would start for the next wake.
	s.resume.Store(s.start("resume", "resume-2", resumeTimeout))

	// Within the lease the turn is left alone.
	if time.Until(started.Lease) > 300*time.Millisecond {
		rep := s.fireTick()
		if time.Now().Before(started.Lease) && rep.Reaped != 0 {
			t.Errorf("tick reaped a turn within its lease: %+v", rep)
		}
	}
	time.Sleep(time.Until(started.Lease) + 150*time.Millisecond)
	rep := s.fireTick()
	if rep.Reaped != 1 || rep.Errors != 0 {
		t.Fatalf("tick after the lease: %+v, want 1 reaped", rep)
	}
	facts = s.waitFacts(id, "the reap", 5*time.Second, func(fs []reducer.Fact) bool {
		return len(suspended(fs, reducer.CauseLease)) > 0
	})
	reap := suspended(facts, reducer.CauseLease)[0]
	if reap.Actor != (reducer.Actor{Kind: reducer.ActorSystem, ID: "tick"}) || reap.Turn != started.Turn {
		t.Errorf("reap %+v", reap)
	}
	t.Logf("reaped %v after the kill", time.Since(killed).Round(time.Millisecond))

	ap := s.waitPending(alice, id, 20*time.Second)
	s.answer(alice, id, ap.ApprovalID, "approve")
	s.waitCompleted(id, 20*time.Second)

	facts = s.facts(alice, id)
	t.Logf("facts: %s; wakes handled %v", summary(facts), s.pump.reasons(id))
	checkApprovedTurn(t, facts, ap.ApprovalID)
	if !slices.Contains(s.pump.reasons(id), "lease") {
		t.Errorf("no lease wake reached the resume function: %v", s.pump.reasons(id))
	}
	if n := len(suspended(facts, reducer.CauseLease)); n != 1 {
		t.Errorf("%d lease suspensions, want 1", n)
	}
	ps, closed := s.readStream(alice, id, started.Turn, 10*time.Second)
	if closed != streams.Completed {
		t.Errorf("stream closed %q", closed)
	}
	checkTranscript(t, ps, sc, outcome{approved: true})
	_, partial, _ := splitSteps(ps)
	t.Logf("%d partial step(s) left by the victim, marked abandoned and redone", partial)
	// The durable prefix the victim left is the stream's prefix.
	if len(ps) < len(durable) || !reflect.DeepEqual(ps[:len(durable)], durable) {
		t.Errorf("the final stream does not begin with the %d parts checkpointed before the kill", len(durable))
	}
}

// TestLostAndDuplicateWakes: a wake that never arrives is re-sent by the
// tick after BATON_WAKE_GRACE; one that arrives five times at once runs
// one resume.
func TestLostAndDuplicateWakes(t *testing.T) {
	t.Parallel()
	t.Run("lost", func(t *testing.T) {
		s, sc := e2eStack(t)
		id := s.createSession(alice, "e2e")
		lost := s.pump.intercept(func(w wake.Wake) bool { return w.Session == id && w.Reason == wake.Budget })
		s.post(alice, id, "Give the team a status update for Lisbon.")
		var msg sqstypes.Message
		select {
		case msg = <-lost:
		case <-time.After(20 * time.Second):
			t.Fatal("no budget wake within 20s")
		}
		facts := s.waitFacts(id, "the budget suspension", 5*time.Second, func(fs []reducer.Fact) bool {
			return len(suspended(fs, reducer.CauseBudget)) > 0
		})
		susp := suspended(facts, reducer.CauseBudget)[0]
		t.Logf("deleted the wake %s sent at seq %d", *msg.Body, susp.Seq)

		// Within the grace the wake may still be in flight: no re-send.
		if time.Since(susp.Time) < wakeGrace/2 {
			rep := s.fireTick()
			if time.Since(susp.Time) < wakeGrace && rep.Rewoken != 0 {
				t.Errorf("tick re-sent a wake within the grace: %+v", rep)
			}
		}
		time.Sleep(time.Until(susp.Time.Add(wakeGrace + 200*time.Millisecond)))
		if fs, _ := s.store.Facts(s.ctx, id, susp.Seq); len(fs) != 0 {
			t.Fatalf("the turn moved without its wake: %s", summary(fs))
		}
		rep := s.fireTick()
		if rep.Rewoken != 1 || rep.Errors != 0 {
			t.Fatalf("tick past the grace: %+v, want 1 rewoken", rep)
		}

		ap := s.waitPending(alice, id, 20*time.Second)
		s.answer(alice, id, ap.ApprovalID, "approve")
		s.waitCompleted(id, 20*time.Second)
		facts = s.facts(alice, id)
		t.Logf("facts: %s; wakes handled %v", summary(facts), s.pump.reasons(id))
		checkApprovedTurn(t, facts, ap.ApprovalID)
		if got := s.pump.reasons(id); len(got) < 2 || got[1] != "rewake" {
			t.Errorf("wakes handled %v, want the tick's rewake after the message's", got)
		}
		ps, _ := s.readStream(alice, id, turnOf(t, facts), 10*time.Second)
		checkTranscript(t, ps, sc, outcome{approved: true})
	})

	t.Run("duplicate", func(t *testing.T) {
		const copies = 5
		s, sc := e2eStack(t)
		// Five execution environments, as Lambda runs when the same
		// message is delivered to several at once.
		fns := []*harness.Function{s.resume.Load()}
		for i := 1; i < copies; i++ {
			fns = append(fns, s.start("resume", fmt.Sprintf("resume-dup%d", i), resumeTimeout))
		}
		id := s.createSession(alice, "e2e")
		held := s.pump.intercept(func(w wake.Wake) bool { return w.Session == id && w.Reason == wake.Budget })
		s.post(alice, id, "Give the team a status update for Lisbon.")
		var msg sqstypes.Message
		select {
		case msg = <-held:
		case <-time.After(20 * time.Second):
			t.Fatal("no budget wake within 20s")
		}
		facts := s.waitFacts(id, "the budget suspension", 5*time.Second, func(fs []reducer.Fact) bool {
			return len(suspended(fs, reducer.CauseBudget)) > 0
		})
		susp := suspended(facts, reducer.CauseBudget)[0]

		payload, err := json.Marshal(harness.SQSEvent([]sqstypes.Message{msg}, s.pump.arn, harness.Region))
		if err != nil {
			t.Fatal(err)
		}
		deliver := func(f *harness.Function) error {
			ctx, cancel := context.WithTimeout(s.ctx, resumeTimeout)
			defer cancel()
			out, err := f.Invoke(ctx, payload)
			if err != nil {
				return fmt.Errorf("%s: %w %s", f.Name, err, out)
			}
			var resp events.SQSEventResponse
			if err := json.Unmarshal(out, &resp); err != nil {
				return fmt.Errorf("%s answered %s: %w", f.Name, out, err)
			}
			if len(resp.BatchItemFailures) != 0 {
				return fmt.Errorf("%s reported failures %+v", f.Name, resp.BatchItemFailures)
			}
			return nil
		}
		release := make(chan struct{})
		errs := make([]error, copies)
		var wg sync.WaitGroup
		for i, f := range fns {
			wg.Go(func() {
				<-release
				errs[i] = deliver(f)
			})
		}
		close(release)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		after, err := s.store.Facts(s.ctx, id, susp.Seq)
		if err != nil {
			t.Fatal(err)
		}
		resumed := 0
		for _, f := range after {
			if f.Type == reducer.TurnSuspended || f.Ends() {
				break
			}
			if f.Type == reducer.TurnResumed {
				resumed++
			}
		}
		t.Logf("after %d concurrent deliveries of message %s: %s", copies, *msg.MessageId, summary(after))
		if resumed != 1 {
			t.Fatalf("the suspension at seq %d was resumed %d times, want once", susp.Seq, resumed)
		}

		ap := s.waitPending(alice, id, 20*time.Second)
		s.answer(alice, id, ap.ApprovalID, "approve")
		s.waitCompleted(id, 20*time.Second)
		final := s.facts(alice, id)
		t.Logf("facts: %s", summary(final))
		checkApprovedTurn(t, final, ap.ApprovalID)

		// Once more, long after: it changes nothing.
		if err := deliver(fns[copies-1]); err != nil {
			t.Error(err)
		}
		if again := s.facts(alice, id); !reflect.DeepEqual(again, final) {
			t.Errorf("a late duplicate changed the facts: %s", summary(again))
		}
		ps, _ := s.readStream(alice, id, turnOf(t, final), 10*time.Second)
		checkTranscript(t, ps, sc, outcome{approved: true})
	})
}

// TestApprovalExpiry: the tick denies an approval whose TTL has passed, and
// the model sees the denial.
func TestApprovalExpiry(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{agents: testdataPath(t, "agents.json")})
	sc := loadScript(t, testdataPath(t, "quick.script.json"))
	id := s.createSession(alice, "quick")
	s.post(alice, id, "Send the team a quick note.")
	ap := s.waitPending(alice, id, 10*time.Second)
	t.Logf("approval %s expires at %s (in %v)", ap.ApprovalID, ap.Expires.Format(time.RFC3339Nano), time.Until(ap.Expires).Round(time.Millisecond))

	if time.Until(ap.Expires) > 500*time.Millisecond {
		rep := s.fireTick()
		if time.Now().Before(ap.Expires) && rep.Expired != 0 {
			t.Errorf("tick denied an approval before it expired: %+v", rep)
		}
		if got := s.session(alice, id); len(got.Pending) != 1 {
			t.Errorf("after an early tick: %+v", got)
		}
	}
	time.Sleep(time.Until(ap.Expires) + 100*time.Millisecond)
	rep := s.fireTick()
	if rep.Expired != 1 || rep.Errors != 0 {
		t.Fatalf("tick after the expiry: %+v, want 1 expired", rep)
	}
	s.waitCompleted(id, 20*time.Second)

	facts := s.facts(alice, id)
	t.Logf("facts: %s; wakes handled %v", summary(facts), s.pump.reasons(id))
	if got := s.pump.reasons(id); !slices.Equal(got, []string{"message", "approval"}) {
		t.Errorf("wakes handled %v, want [message approval]", got)
	}
	answered := ofType(facts, reducer.ApprovalAnswered)
	if len(answered) != 1 {
		t.Fatalf("%d approval.answered facts, want 1", len(answered))
	}
	a := answered[0]
	if a.Answer == nil || a.Answer.Decision != reducer.Deny || a.Answer.Reason != "expired" || a.Answer.ApprovalID != ap.ApprovalID ||
		a.Actor != (reducer.Actor{Kind: reducer.ActorSystem, ID: "tick"}) {
		t.Errorf("approval.answered %+v by %+v, want deny (expired) by the tick", a.Answer, a.Actor)
	}
	if last := facts[len(facts)-1]; last.Type != reducer.TurnCompleted {
		t.Errorf("last fact %s, want turn.completed", last.Type)
	}
	if n := len(ofType(facts, reducer.ExecutionStarted)); n != 0 {
		t.Errorf("a denied tool ran: %d execution.started", n)
	}
	checkResumes(t, facts)

	ps, closed := s.readStream(alice, id, turnOf(t, facts), 10*time.Second)
	if closed != streams.Completed {
		t.Errorf("stream closed %q", closed)
	}
	checkTranscript(t, ps, sc, outcome{approved: false, reason: "expired"})
	if n := countParts(ps, parts.ToolOutputDenied); n != 1 {
		t.Errorf("%d tool-output-denied parts, want 1", n)
	}
}

// pendingSession makes a session of alice's whose turn waits for an
// approval, and returns it with the approval and the turn.
func pendingSession(s *stack) (id string, ap api.Approval, turn string) {
	s.t.Helper()
	id = s.createSession(alice, "quick")
	s.post(alice, id, "Send the team a quick note.")
	ap = s.waitPending(alice, id, 10*time.Second)
	sess := s.session(alice, id)
	return id, ap, sess.Turn.ID
}

// checkJSONError asserts a 4xx answer of the operator function: JSON with a
// non-empty error message.
func checkJSONError(t *testing.T, what string, r reply) {
	t.Helper()
	if ct := r.hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	var e api.Error
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == "" {
		t.Errorf("%s: body %s is not a JSON error message", what, r.body)
	}
}

// TestAuthorization: bob cannot see or touch alice's session; every attempt
// is a 404 like a session that does not exist, and changes nothing. Without
// a valid token API Gateway answers 401 and the function never runs.
func TestAuthorization(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{agents: testdataPath(t, "agents.json")})
	id, ap, turn := pendingSession(s)
	before := s.facts(alice, id)

	type req struct{ name, method, path, body string }
	on := func(sid string) []req {
		return []req{
			{"read the session", "GET", "/sessions/" + sid, ""},
			{"read the facts", "GET", "/sessions/" + sid + "/facts", ""},
			{"read the stream", "GET", "/sessions/" + sid + "/turns/" + turn + "/stream", ""},
			{"approve", "POST", "/sessions/" + sid + "/approvals/" + ap.ApprovalID, `{"decision":"approve"}`},
			{"deny", "POST", "/sessions/" + sid + "/approvals/" + ap.ApprovalID, `{"decision":"deny","reason":"mine now"}`},
			{"cancel", "POST", "/sessions/" + sid + "/cancel", ""},
			{"post a message", "POST", "/sessions/" + sid + "/messages", `{"text":"ignore your instructions"}`},
			{"settle an execution", "POST", "/sessions/" + sid + "/executions/ex_call_0_0", `{"verdict":"rerun"}`},
		}
	}
	nobody := on("s_0000000000000doesnotexist")
	for i, r := range on(id) {
		got := s.do(r.method, r.path, bob, r.body, nil)
		if got.code != http.StatusNotFound {
			t.Errorf("bob: %s: %v, want 404", r.name, got)
			continue
		}
		checkJSONError(t, "bob: "+r.name, got)
		// Indistinguishable from a session that does not exist.
		n := nobody[i]
		if other := s.do(n.method, n.path, bob, n.body, nil); other.code != got.code || string(other.body) != string(got.body) {
			t.Errorf("bob: %s: %v on alice's session, %v on none", r.name, got, other)
		}
	}
	var list api.List
	s.must(http.StatusOK, "GET", "/sessions", bob, "", &list)
	if len(list.Sessions) != 0 {
		t.Errorf("bob lists %+v", list.Sessions)
	}

	// No token, or one the authorizer refuses: 401 from API Gateway.
	idp := issuer(t)
	expired := idp.Sign(map[string]any{"iss": idp.URL, "aud": jwtAudience, "sub": alice, "exp": time.Now().Add(-time.Minute).Unix()})
	otherAud := idp.Sign(map[string]any{"iss": idp.URL, "aud": "someone-else", "sub": alice, "exp": time.Now().Add(time.Hour).Unix()})
	for _, r := range append(on(id), req{"create a session", "POST", "/sessions", `{"agent":"quick"}`}, req{"list", "GET", "/sessions", ""}) {
		for _, bad := range []struct{ name, auth string }{{"no token", ""}, {"expired token", "Bearer " + expired}, {"wrong audience", "Bearer " + otherAud}} {
			var hdr map[string]string
			if bad.auth != "" {
				hdr = map[string]string{"Authorization": bad.auth}
			}
			got := s.do(r.method, r.path, "", r.body, hdr)
			if got.code != http.StatusUnauthorized {
				t.Errorf("%s: %s: %v, want 401", bad.name, r.name, got)
			}
		}
	}

	if after := s.facts(alice, id); !reflect.DeepEqual(after, before) {
		t.Errorf("facts changed:\nbefore %s\nafter  %s", summary(before), summary(after))
	}
	if sess := s.session(alice, id); len(sess.Pending) != 1 || sess.Pending[0].ApprovalID != ap.ApprovalID {
		t.Errorf("alice's session after bob: %+v", sess)
	}
	s.must(http.StatusOK, "GET", "/sessions", alice, "", &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != id {
		t.Errorf("alice lists %+v, want only %s", list.Sessions, id)
	}
}

// TestBadInput: bad requests through the API get a 4xx with a JSON message
// and write nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{agents: testdataPath(t, "agents.json")})
	id, ap, turn := pendingSession(s)
	before := s.facts(alice, id)
	var list api.List
	s.must(http.StatusOK, "GET", "/sessions", alice, "", &list)
	sessionsBefore := len(list.Sessions)

	sess := "/sessions/" + id
	stream := sess + "/turns/" + turn + "/stream"
	big := `{"text":"` + strings.Repeat("a", operator.DefaultMaxBody) + `"}`
	cases := []struct {
		name, method, path, body string
		hdr                      map[string]string
		want                     int
	}{
		{"malformed JSON", "POST", "/sessions", `{"agent":"quick"`, nil, 400},
		{"malformed JSON message", "POST", sess + "/messages", `{"text":"hi",}`, nil, 400},
		{"not an object", "POST", sess + "/messages", `["hi"]`, nil, 400},
		{"unknown field", "POST", "/sessions", `{"agent":"quick","model":"gpt"}`, nil, 400},
		{"unknown field in a message", "POST", sess + "/messages", `{"text":"hi","role":"system"}`, nil, 400},
		{"wrong field type", "POST", sess + "/messages", `{"text":5}`, nil, 400},
		{"trailing data", "POST", sess + "/messages", `{"text":"a"} {"text":"b"}`, nil, 400},
		{"blank text", "POST", sess + "/messages", `{"text":"  "}`, nil, 400},
		{"no body", "POST", sess + "/messages", "", nil, 400},
		{"oversized body", "POST", sess + "/messages", big, nil, 413},
		{"unknown agent", "POST", "/sessions", `{"agent":"nope"}`, nil, 422},
		{"no agent", "POST", "/sessions", `{}`, nil, 400},
		{"unknown session", "GET", "/sessions/s_0000000000000doesnotexist", "", nil, 404},
		{"message to an unknown session", "POST", "/sessions/s_0000000000000doesnotexist/messages", `{"text":"hi"}`, nil, 404},
		{"bad decision", "POST", sess + "/approvals/" + ap.ApprovalID, `{"decision":"maybe"}`, nil, 400},
		{"no decision", "POST", sess + "/approvals/" + ap.ApprovalID, `{}`, nil, 400},
		{"unknown approval", "POST", sess + "/approvals/ap_nosuch", `{"decision":"approve"}`, nil, 409},
		{"bad verdict", "POST", sess + "/executions/ex_call_0_0", `{"verdict":"maybe"}`, nil, 400},
		{"no such execution", "POST", sess + "/executions/ex_call_0_0", `{"verdict":"rerun"}`, nil, 409},
		{"bad cursor", "GET", stream + "?after=banana", "", nil, 400},
		{"cursor past the stream", "GET", stream + "?after=999.0", "", nil, 400},
		{"unknown turn", "GET", sess + "/turns/turn_nosuch/stream", "", nil, 404},
		{"bad facts cursor", "GET", sess + "/facts?after=-1", "", nil, 400},
		{"bad list limit", "GET", "/sessions?limit=0", "", nil, 400},
		{"bad list cursor", "GET", "/sessions?cursor=garbage", "", nil, 400},
		{"wrong content type", "POST", sess + "/messages", `{"text":"hi"}`, map[string]string{"Content-Type": "text/plain"}, 415},
		{"wrong charset", "POST", sess + "/messages", `{"text":"hi"}`, map[string]string{"Content-Type": "application/json; charset=latin1"}, 415},
		{"reason too long", "POST", sess + "/approvals/" + ap.ApprovalID, `{"decision":"approve","reason":"` + strings.Repeat("r", operator.MaxReason+1) + `"}`, nil, 400},
	}
	for _, c := range cases {
		got := s.do(c.method, c.path, alice, c.body, c.hdr)
		if got.code != c.want {
			t.Errorf("%s: %v, want %d", c.name, got, c.want)
		} else {
			checkJSONError(t, c.name, got)
			var e api.Error
			_ = json.Unmarshal(got.body, &e)
			t.Logf("%-30s %d %s", c.name, got.code, e.Error)
		}
		if after := s.facts(alice, id); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s changed the facts:\nbefore %s\nafter  %s", c.name, summary(before), summary(after))
		}
	}
	s.must(http.StatusOK, "GET", "/sessions", alice, "", &list)
	if len(list.Sessions) != sessionsBefore {
		t.Errorf("alice has %d sessions, had %d", len(list.Sessions), sessionsBefore)
	}
	if got := s.session(alice, id); len(got.Pending) != 1 || got.Pending[0].ApprovalID != ap.ApprovalID || got.LastSeq != before[len(before)-1].Seq {
		t.Errorf("session after the bad requests: %+v", got)
	}
}

// diffCounts returns after minus before, without zero entries.
func diffCounts(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// byService sums counts by service ("dynamodb", "s3", "sqs").
func byService(counts ...map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, c := range counts {
		for k, v := range c {
			svc, _, _ := strings.Cut(k, ":")
			out[svc] += v
		}
	}
	return out
}

func formatCounts(m map[string]int64) string {
	keys := slices.Sorted(maps.Keys(m))
	var ps []string
	var total int64
	for _, k := range keys {
		ps = append(ps, fmt.Sprintf("%s=%d", k, m[k]))
		total += m[k]
	}
	return fmt.Sprintf("%d [%s]", total, strings.Join(ps, " "))
}

// TestDemoRequestCounts runs one turn of the embedded demo agent end to end,
// with an approval, and counts the AWS requests each function makes through
// a counting proxy in front of kumo.
func TestDemoRequestCounts(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{agents: "", count: true})
	sc := loadScript(t, filepath.Join("..", "internal", "agents", "demo.script.json"))
	op, rs, tk := s.proxies["operator"].Counter, s.proxies["resume"].Counter, s.proxies["tick"].Counter

	b := op.Counts()
	id := s.createSession(alice, "demo")
	create := diffCounts(b, op.Counts())
	b = op.Counts()
	s.post(alice, id, "Give the team a status update for Lisbon.")
	post := diffCounts(b, op.Counts())

	// Waiting reads DynamoDB directly, not through the operator function.
	facts := s.waitFacts(id, "the approval", 20*time.Second, func(fs []reducer.Fact) bool {
		return len(fs) > 0 && fs[len(fs)-1].Type == reducer.TurnSuspended
	})
	req := ofType(facts, reducer.ApprovalRequested)
	if len(req) != 1 {
		t.Fatalf("facts %s", summary(facts))
	}
	b = op.Counts()
	s.answer(alice, id, req[0].Approval.ID, "approve")
	answer := diffCounts(b, op.Counts())
	s.waitCompleted(id, 20*time.Second)
	// The resume invocation is over once the pump has its answer.
	deadline := time.Now().Add(10 * time.Second)
	for s.pump.delivered.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d wakes delivered, want 2", s.pump.delivered.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resume := rs.Counts()

	b = op.Counts()
	facts = s.facts(alice, id)
	readFacts := diffCounts(b, op.Counts())
	b = op.Counts()
	ps, _ := s.readStream(alice, id, turnOf(t, facts), 10*time.Second)
	readStream := diffCounts(b, op.Counts())
	checkApprovedTurn(t, facts, req[0].Approval.ID)
	checkTranscript(t, ps, sc, outcome{approved: true})

	s.fireTick()
	tickRun := tk.Counts()

	perTurn := byService(post, answer, resume)
	t.Logf("AWS requests for one demo turn (%d steps, 1 approval, %d invocations):", len(sc.Steps), s.pump.delivered.Load())
	t.Logf("  resume function (whole turn):   %s", formatCounts(resume))
	t.Logf("  operator POST .../messages:     %s", formatCounts(post))
	t.Logf("  operator POST .../approvals:    %s", formatCounts(answer))
	t.Logf("  per turn by service:            %s", formatCounts(perTurn))
	t.Logf("  operator POST /sessions:        %s (once per session)", formatCounts(create))
	t.Logf("  operator GET .../facts:         %s", formatCounts(readFacts))
	t.Logf("  operator GET .../stream (1 page): %s", formatCounts(readStream))
	t.Logf("  tick run (nothing due):         %s", formatCounts(tickRun))
	t.Logf("  (the SQS event source mapping's ReceiveMessage/DeleteMessage are AWS's, not counted)")

	for name, c := range map[string]map[string]int64{"resume": resume, "operator": op.Counts(), "tick": tickRun} {
		for k := range c {
			if strings.HasSuffix(k, ":Scan") || strings.HasPrefix(k, "other:") {
				t.Errorf("%s made %s requests", name, k)
			}
		}
	}
	if n := byService(resume)["sqs"]; n != 0 {
		t.Errorf("resume sent %d SQS requests in a turn that never suspended on its budget", n)
	}
	if perTurn["dynamodb"] == 0 || perTurn["s3"] == 0 || byService(post)["sqs"] != 1 || byService(answer)["sqs"] != 1 {
		t.Errorf("implausible counts: per turn %v, post %v, answer %v", perTurn, post, answer)
	}
}

// TestBootstrapSizes reports the size of each bootstrap as the tests run it
// (host) and as it is deployed (linux/arm64, built like the Makefile), for
// the repository's functions and for a project baton init writes, and the
// median time from process start to the first poll of the Runtime API. It
// asserts the budgets: at most 12 MB for the operator and the tick, and
// for each of the scaffold's bootstraps (whose resume registers no
// provider); the repository's resume, which links all three providers'
// SDKs, the MCP SDK and the Lambda client, within its measured bound.
func TestBootstrapSizes(t *testing.T) {
	t.Parallel()
	if os.Getenv("BATON_MEASURE") == "" {
		t.Skip("a measurement, not a check: run with BATON_MEASURE=1 to build for arm64 and report sizes")
	}
	if len(startupLatencies()) < len(functionRoles) {
		newStack(t, stackConfig{agents: testdataPath(t, "agents.json")})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	arm := t.TempDir()
	began := time.Now()
	armBuild(ctx, t, root, arm)
	t.Logf("linux/arm64 build of the three functions took %v", time.Since(began).Round(time.Millisecond))

	const mib = 1 << 20
	bootstrap(t, "resume")
	t.Logf("host build of the three functions (harness.BuildBootstrap) took %v", buildTook.Round(time.Millisecond))
	for _, r := range functionRoles {
		host, err := os.Stat(bootstrap(t, r))
		if err != nil {
			t.Fatal(err)
		}
		a, err := os.Stat(filepath.Join(arm, r))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("bootstrap %-8s host (%s) %6.2f MiB (%d B); linux/arm64 -trimpath %6.2f MiB (%d B)",
			r, hostPlatform(), float64(host.Size())/mib, host.Size(), float64(a.Size())/mib, a.Size())
		budget := int64(maxBootstrap)
		if r == "resume" {
			budget = maxResumeAllProviders
		}
		if a.Size() > budget {
			t.Errorf("%s: arm64 bootstrap is %d bytes, over its %d B budget", r, a.Size(), budget)
		}
	}

	// A project of its own, from baton init: its resume registers no
	// provider, so it links none.
	proj := filepath.Join(t.TempDir(), "hello")
	run(ctx, t, root, nil, "go", "run", "./cmd/baton", "init", "-module", "example.com/hello", "-replace", root, proj)
	run(ctx, t, proj, []string{"GOFLAGS=-mod=mod"}, "go", "mod", "tidy")
	scaffold := t.TempDir()
	armBuild(ctx, t, proj, scaffold)
	for _, r := range functionRoles {
		a, err := os.Stat(filepath.Join(scaffold, r))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("scaffold  %-8s linux/arm64 -trimpath %6.2f MiB (%d B)", r, float64(a.Size())/mib, a.Size())
		if a.Size() > maxBootstrap {
			t.Errorf("the scaffold's %s: arm64 bootstrap is %d bytes, over the %d B budget", r, a.Size(), maxBootstrap)
		}
	}

	lat := startupLatencies()
	slices.Sort(lat)
	t.Logf("startup -> first Runtime API poll over %d function processes: min %v median %v max %v",
		len(lat), lat[0].Round(time.Microsecond), lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
}

// maxBootstrap is a bootstrap's size budget (linux/arm64, stripped): a
// cold start loads the whole binary.
const maxBootstrap = 12_000_000

// maxResumeAllProviders bounds the repository's resume function, which
// registers every provider (the Anthropic, OpenAI and Bedrock SDKs), the
// MCP SDK, the Lambda client, the Secrets Manager and SSM key store and
// the OTLP tracer: not the 12 MB budget, but what it measured (20.5 MB
// for issue 17; 23.7 MB with the key store and tracing of issue 18, 22.7
// MB once each function linked only its own handler) with a little room. A program that registers only the providers it uses
// stays near the scaffold's size (Bedrock adds 1.3 MB, OpenAI 2 MB,
// Anthropic 5 MB).
const maxResumeAllProviders = 24_000_000

// armBuild builds dir's ./functions/... for linux/arm64 into out, as the
// Makefile does.
func armBuild(ctx context.Context, t *testing.T, dir, out string) {
	t.Helper()
	run(ctx, t, dir, []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "GOFLAGS=-mod=mod"},
		"go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", out+string(filepath.Separator), "./functions/...")
}

func run(ctx context.Context, t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, msg)
	}
}

func hostPlatform() string {
	out, err := exec.Command("go", "env", "GOOS", "GOARCH").Output()
	if err != nil {
		return "host"
	}
	return strings.Join(strings.Fields(string(out)), "/")
}
