package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/claims/claimsdb"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/tool/remote"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// orderServer is the tool server the refunds call over HTTP. It records,
// per order, how many refunds run at once, and flags any overlap.
type orderServer struct {
	*httptest.Server
	hold     time.Duration
	mu       sync.Mutex
	active   map[string]int
	runs     map[string]int
	overlaps []string
	// hang, when set, makes the first refund hang until its caller goes
	// away (the invocation dies mid-effect); started is closed as it does.
	hang    bool
	started chan struct{}
}

func newOrderServer(t *testing.T, hold time.Duration) *orderServer {
	s := &orderServer{hold: hold, active: map[string]int{}, runs: map[string]int{}, started: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.refund))
	t.Cleanup(s.Close)
	return s
}

func (s *orderServer) refund(w http.ResponseWriter, r *http.Request) {
	var env struct {
		Input struct {
			Order string `json:"order"`
		} `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o := env.Input.Order
	s.mu.Lock()
	s.active[o]++
	if s.active[o] > 1 {
		s.overlaps = append(s.overlaps, o)
	}
	s.runs[o]++
	hang := s.hang && s.runs[o] == 1
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.active[o]--
		s.mu.Unlock()
	}()
	if hang {
		close(s.started)
		<-r.Context().Done() // the invocation dies here
		return
	}
	time.Sleep(s.hold)
	fmt.Fprintf(w, `{"refunded":%q}`, o)
}

func (s *orderServer) report() (map[string]int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps(s.runs), slices.Clone(s.overlaps)
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// refundTool is a write tool served by srv that claims the order it
// refunds, in a namespace of the test's own (nil claims: none).
func refundTool(srv *orderServer, instance string, claimed bool) tool.Tool {
	t := remote.HTTPTool("refund", "Refund an order.",
		json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`),
		tool.Write, false, srv.URL, 10*time.Second, nil)
	if claimed {
		t.Claims = claims.Of(claims.Static{Namespace: "orders", Instance: instance, Field: "order", Access: claims.Write})
	}
	return t
}

func refundAgent(t *testing.T, js string, tl tool.Tool, lim turn.Limits) *turn.Agent {
	reg, err := tool.NewRegistry(tl)
	if err != nil {
		t.Fatal(err)
	}
	return &turn.Agent{Name: "demo", Model: script(t, js), Tools: reg, Limits: lim}
}

// claimed is an invocation whose runner has a claims broker on the same
// storage (on the emulator, the same counted clients); opts apply to the
// broker's requests.
func claimed(t testing.TB, agent *turn.Agent, poll time.Duration, opts ...func(*dynamodb.Options)) (*invocation, *claimsdb.Broker) {
	inv := fresh(t, agent)
	var b *claimsdb.Broker
	if inv.clients != nil {
		b = claimsdb.New(inv.clients.DynamoDB, env.Table, opts...)
	} else {
		b = claimsdb.New(stackOf(t).mem.Items, "memory", opts...)
	}
	b.Poll, b.Fate, b.Clock = poll, turn.GrantFate(inv.sessions), inv.sessions.Now
	inv.runner.Claims, inv.sessions.Claims = b, b
	return inv, b
}

const refundFive = `{"steps":[
 {"text":"Refunding.","toolCalls":[
  {"name":"refund","input":{"order":"o1"}},{"name":"refund","input":{"order":"o2"}},
  {"name":"refund","input":{"order":"o3"}},{"name":"refund","input":{"order":"o4"}},
  {"name":"refund","input":{"order":"o5"}}]},
 {"text":"Refunded."}
]}`

// Must show 3: twenty sessions each refund the same five orders through a
// tool that writes the order key. Driven by wakes through SQS (a worker
// polling a queue of the test's own): no refund of an order overlaps
// another, every session completes, each order is refunded once per
// session, and the blocked sessions are woken by the releases.
func TestClaimsCollision(t *testing.T) {
	t.Parallel()
	onEmulator(t) // counts requests, injects faults or reads the queue
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srv := newOrderServer(t, 5*time.Millisecond)
	agent := refundAgent(t, refundFive, refundTool(srv, ids.New("i"), true), turn.Limits{Budget: 30 * time.Second})
	inv, _ := claimed(t, agent, 2*time.Second)
	q, err := inv.clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(ids.New("claims"))})
	if err != nil {
		t.Fatal(err)
	}
	waker := wake.NewSQS(inv.clients.SQS, aws.ToString(q.QueueUrl))
	inv.runner.Waker = waker
	w := &worker.Worker{Sessions: inv.sessions, Runner: inv.runner, Concurrency: 8}
	pollCtx, stop := context.WithCancel(ctx)
	polled := make(chan error, 1)
	go func() { polled <- worker.Poll(pollCtx, inv.clients.SQS, aws.ToString(q.QueueUrl), w.HandleSQS, nil) }()
	defer func() { stop(); <-polled }()

	const n = 20
	sessions := make([]string, n)
	for i := range sessions {
		sessions[i] = newSession(t, inv, "Refund my five orders.")
	}
	for _, id := range sessions {
		if err := waker.Wake(ctx, wake.Wake{Session: id, Reason: wake.Message}, 0); err != nil {
			t.Fatal(err)
		}
	}
	waitAll(ctx, t, inv, sessions)

	runs, overlaps := srv.report()
	if len(overlaps) > 0 {
		t.Fatalf("refunds of one order overlapped %d times: %v", len(overlaps), overlaps)
	}
	for _, o := range []string{"o1", "o2", "o3", "o4", "o5"} {
		if runs[o] != n {
			t.Errorf("order %s refunded %d times, want %d", o, runs[o], n)
		}
	}
	blocked, lat := releaseToResume(t, inv, sessions)
	if blocked == 0 {
		t.Fatal("no session was ever blocked: the test made no contention")
	}
	t.Logf("%d blocked suspensions; release to resume (%d measured): p50 %v, p99 %v", blocked, len(lat), pct(lat, 50), pct(lat, 99))
}

// waitAll waits until every session's turn has ended, failing the test if
// one is still open when ctx ends.
func waitAll(ctx context.Context, t *testing.T, inv *invocation, ids []string) {
	t.Helper()
	for {
		open := ""
		for _, id := range ids {
			sess, err := inv.sessions.Load(ctx, id)
			if err == nil && (sess.State.Turns == 0 || sess.State.Turn != nil) {
				open = fmt.Sprintf("%s: %s %+v", id, sess.State.Status, sess.State.Turn)
				break
			}
		}
		if open == "" {
			for _, id := range ids {
				if st := teststack.Load(t, inv.sessions, id); st.Last != reducer.TurnCompleted {
					t.Fatalf("session %s ended as %s: %+v", id, st.Last, st.LastFailure)
				}
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("a session waits forever: %s", open)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// releaseToResume reads, from the sessions' facts, each blocked
// suspension and how long after the last release of a grant on its claims
// (the one that unblocked it, in this test's queue) the session resumed.
func releaseToResume(t *testing.T, inv *invocation, sessions []string) (blocked int, lat []time.Duration) {
	type release struct {
		at     time.Time
		claims []claims.Claim
	}
	var releases []release
	all := map[string][]reducer.Fact{}
	for _, id := range sessions {
		fs := facts(t, inv, id)
		all[id] = fs
		for _, f := range fs {
			if f.Type == reducer.ClaimReleased {
				releases = append(releases, release{f.Time, f.Grant.Claims})
			}
		}
	}
	for _, fs := range all {
		for i, f := range fs {
			if f.Type != reducer.TurnSuspended || f.Cause != reducer.CauseBlocked {
				continue
			}
			blocked++
			var resumed, last time.Time
			for _, g := range fs[i+1:] {
				if g.Type == reducer.TurnResumed {
					resumed = g.Time
					break
				}
			}
			for _, r := range releases {
				if r.at.Before(resumed) && r.at.After(last) && claims.ConflictAny(r.claims, f.Block.Claims) {
					last = r.at
				}
			}
			if !last.IsZero() {
				lat = append(lat, resumed.Sub(last))
			}
		}
	}
	return blocked, lat
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

const refundOne = `{"steps":[
 {"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"o1"}}]},
 {"text":"Refunded."}
]}`

// Must show 4: an invocation killed mid-refund keeps its claim: a second
// session blocked on it stays blocked past the grant's deadline, through
// the quarantine and the rerun verdict (the rerun keeps the grant), and is
// granted only after the rerun's result released it.
func TestClaimsQuarantineHoldsUntilVerdict(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	srv := newOrderServer(t, 0)
	srv.hang = true
	lim := turn.Limits{Budget: 2 * time.Second, Margin: 100 * time.Millisecond, LeaseGrace: 10 * time.Millisecond}
	instance := ids.New("i")
	agent := refundAgent(t, refundOne, refundTool(srv, instance, true), lim)
	inv, b := claimed(t, agent, 2*time.Second)
	a := newSession(t, inv, "Refund o1.")
	dying, kill := context.WithCancel(ctx)
	go func() { <-srv.started; kill() }()
	if _, err := inv.runner.Start(dying, a); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed run: %v", err)
	}
	other := newSession(t, inv, "Refund o1 too.")
	blockedOn := func(stage string) {
		t.Helper()
		st := teststack.Load(t, inv.sessions, other)
		if st.Status != reducer.Suspended || st.Turn.Cause != reducer.CauseBlocked || len(st.Turn.Block.Blockers) != 1 ||
			st.Turn.Block.Blockers[0].ID != claims.GrantID(a, turn.CallID(st.Turn.Block.Blockers[0].Turn, 0, 0)) {
			t.Fatalf("%s: the second session is %s %+v, want blocked on the first's grant", stage, st.Status, st.Turn)
		}
	}
	resume := func(id string) turn.Outcome {
		t.Helper()
		out, err := inv.runner.Resume(ctx, id)
		if err != nil {
			t.Fatalf("resume %s: %v", id, err)
		}
		return out
	}
	if out, err := inv.runner.Start(ctx, other); err != nil || out.Cause != reducer.CauseBlocked {
		t.Fatalf("second session: %+v %v, want blocked", out, err)
	}
	blockedOn("while the first runs")
	sa := teststack.Load(t, inv.sessions, a)
	pass(t, sa.Turn.Lease.Add(20*time.Millisecond))
	resume(other) // the grant is past its deadline; its execution started
	blockedOn("past the grant's deadline")

	if out := resume(a); out.Cause != reducer.CauseUncertain {
		t.Fatalf("first session: %+v, want uncertain", out)
	}
	sa = teststack.Load(t, inv.sessions, a)
	if len(sa.Grants) != 1 || !sa.Grants[0].Quarantined {
		t.Fatalf("grants after the uncertain suspension: %+v, want one quarantined", sa.Grants)
	}
	resume(other)
	blockedOn("quarantined")
	if st := teststack.Load(t, inv.sessions, other); !st.Turn.Block.Blockers[0].Quarantined {
		t.Fatalf("the blocker is not shown quarantined: %+v", st.Turn.Block)
	}
	if err := inv.sessions.Settle(ctx, a, operator, sa.Turn.Uncertain.ID, reducer.Rerun); err != nil {
		t.Fatal(err)
	}
	resume(other)
	blockedOn("after the rerun verdict, before the rerun")
	if out := resume(a); out.Kind != turn.Completed {
		t.Fatalf("rerun: %+v", out)
	}
	if out := resume(other); out.Kind != turn.Completed {
		t.Fatalf("second session after the release: %+v", out)
	}
	var verdict, released, granted time.Time
	for _, f := range facts(t, inv, a) {
		switch f.Type {
		case reducer.ExecutionVerdict:
			verdict = f.Time
		case reducer.ClaimReleased:
			released = f.Time
		}
	}
	for _, f := range facts(t, inv, other) {
		if f.Type == reducer.ClaimGranted {
			granted = f.Time
		}
	}
	if verdict.IsZero() || released.Before(verdict) || !granted.After(released) {
		t.Fatalf("verdict %v, the rerun's release %v, the second session's grant %v: want them in that order", verdict, released, granted)
	}
	runs, overlaps := srv.report()
	if runs["o1"] != 3 || len(overlaps) != 0 {
		t.Fatalf("runs %v, overlaps %v; want 3 runs (killed, rerun, second) and none overlapping", runs, overlaps)
	}
	if gs, ws, err := b.Grants(ctx, claims.SpaceKey{Owner: teststack.Alice.ID, Namespace: "orders", Instance: instance}); err != nil || len(gs) != 0 || len(ws) != 0 {
		t.Fatalf("the broker still holds %+v and queues %+v (%v)", gs, ws, err)
	}
	for _, id := range []string{a, other} {
		if st := teststack.Load(t, inv.sessions, id); len(st.Grants) != 0 {
			t.Fatalf("session %s still holds %+v", id, st.Grants)
		}
	}
}

// Must show 6: the DynamoDB requests a claim adds to a tool call,
// uncontended: the same turn with the tool claiming and not.
func TestClaimsRequestCost(t *testing.T) {
	t.Parallel()
	onEmulator(t) // counts requests, injects faults or reads the queue
	ctx := ctxT(t)
	srv := newOrderServer(t, 0)
	broker := &dynamo.Counter{} // the broker's requests alone
	count := func(claim bool) int64 {
		agent := refundAgent(t, refundOne, refundTool(srv, ids.New("i"), claim), turn.Limits{Budget: 30 * time.Second})
		inv, _ := claimed(t, agent, time.Second, broker.DynamoDB)
		id := newSession(t, inv, "Refund o1.")
		inv.counter.Reset()
		if out, err := inv.runner.Start(ctx, id); err != nil || out.Kind != turn.Completed {
			t.Fatalf("run: %+v %v", out, err)
		}
		return inv.counter.Total("dynamodb:")
	}
	plain, with := count(false), count(true)
	t.Logf("DynamoDB requests for one tool call's turn: %d without a claim, %d with one (+%d: %d the broker's, %d the release fact)",
		plain, with, with-plain, broker.Count(), with-plain-broker.Count())
	if with-plain > 5 {
		t.Fatalf("a claim adds %d requests, want at most 5 (acquire: read and write; release: read and write, and its fact)", with-plain)
	}
}

// Claims a tool computes that are not canonical are refused: the call gets
// a clear error, nothing is claimed and the tool does not run.
func TestClaimsNonCanonicalKeyRefused(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	srv := newOrderServer(t, 0)
	js := `{"steps":[{"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"a/../b"}}]},{"text":"Could not."}]}`
	agent := refundAgent(t, js, refundTool(srv, ids.New("i"), true), turn.Limits{Budget: 30 * time.Second})
	inv, _ := claimed(t, agent, time.Second)
	id := newSession(t, inv, "Refund it.")
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("run: %+v %v", out, err)
	}
	if runs, _ := srv.report(); len(runs) != 0 {
		t.Fatalf("the tool ran: %v", runs)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	got := outputsFor(ps, "")
	if len(got) != 1 || got[0].ErrorText == "" || !containsAll(got[0].ErrorText, "not canonical", "a/../b") {
		t.Fatalf("outputs = %+v, want one error naming the key", got)
	}
	fs := facts(t, inv, id)
	if count(fs, reducer.ClaimGranted) != 0 || count(fs, reducer.ExecutionStarted) != 0 {
		t.Fatalf("facts %v: something was claimed or started", types(fs))
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// A grant past its authorization deadline whose execution never started
// (its invocation acquired it and died before recording the execution:
// the holder's facts do not hold it) is released when it blocks another
// session; one still within its deadline blocks.
func TestClaimsStaleGrantNeverStartedIsReleased(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	srv := newOrderServer(t, 0)
	instance := ids.New("i")
	agent := refundAgent(t, refundOne, refundTool(srv, instance, true), turn.Limits{Budget: 30 * time.Second})
	inv, b := claimed(t, agent, time.Second)
	order := []claims.Claim{{Namespace: "orders", Instance: instance, Key: "o1", Access: claims.Write}}
	holder := newSession(t, inv, "Refund o1.")
	stale := claims.Request{ID: claims.GrantID(holder, "tc_dead"), Owner: teststack.Alice.ID, Session: holder, Turn: "turn_dead", ToolCall: "tc_dead",
		Claims: order, Deadline: time.Now().Add(time.Hour)}
	if adm, err := b.Acquire(ctx, stale); err != nil || adm.Outcome != claims.Granted {
		t.Fatalf("holder: %+v %v", adm, err)
	}
	other := newSession(t, inv, "Refund o1 too.")
	if out, err := inv.runner.Start(ctx, other); err != nil || out.Cause != reducer.CauseBlocked {
		t.Fatalf("within the deadline: %+v %v, want blocked", out, err)
	}
	stale.Deadline = time.Now().Add(-time.Second)
	if _, err := b.Acquire(ctx, stale); err != nil { // the same grant, its deadline now past
		t.Fatal(err)
	}
	out, err := inv.runner.Resume(ctx, other)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("past the deadline: %+v %v, want completed", out, err)
	}
	if gs, _, err := b.Grants(ctx, claims.SpaceKey{Owner: teststack.Alice.ID, Namespace: "orders", Instance: instance}); err != nil || len(gs) != 0 {
		t.Fatalf("grants left: %+v %v", gs, err)
	}
	if runs, _ := srv.report(); runs["o1"] != 1 {
		t.Fatalf("runs = %v", runs)
	}
}

// A turn cancelled while its refund ran leaves its grant held (quarantined
// once it blocks someone past its deadline): no verdict can settle an
// ended turn's execution, so an operator releases the grant, and the
// blocked session then goes on. An operator cannot release the open turn's
// grant (its execution's verdict settles it), nor one not held.
func TestClaimsOperatorReleasesAnEndedTurnsGrant(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	h := killedMidRefund(t, ctx)
	instance, inv, b, a, gid := h.instance, h.inv, h.b, h.a, h.gid
	if err := inv.sessions.ReleaseGrant(ctx, a, operator, gid); !errors.Is(err, session.ErrNotPending) {
		t.Fatalf("releasing the open turn's grant: %v, want ErrNotPending", err)
	}
	if err := inv.sessions.Cancel(ctx, a, operator, "stop"); err != nil {
		t.Fatal(err)
	}
	pass(t, h.lease.Add(20*time.Millisecond))
	other := newSession(t, inv, "Refund o1 too.")
	if out, err := inv.runner.Start(ctx, other); err != nil || out.Cause != reducer.CauseBlocked {
		t.Fatalf("second session: %+v %v, want blocked", out, err)
	}
	if st := teststack.Load(t, inv.sessions, other); !st.Turn.Block.Blockers[0].Quarantined {
		t.Fatalf("the ended turn's grant is not quarantined: %+v", st.Turn.Block)
	}
	if err := inv.sessions.ReleaseGrant(ctx, a, operator, gid); err != nil {
		t.Fatal(err)
	}
	if err := inv.sessions.ReleaseGrant(ctx, a, operator, gid); !errors.Is(err, session.ErrNotPending) {
		t.Fatalf("a second release: %v, want ErrNotPending", err)
	}
	if out, err := inv.runner.Resume(ctx, other); err != nil || out.Kind != turn.Completed {
		t.Fatalf("after the release: %+v %v, want completed", out, err)
	}
	if gs, _, err := b.Grants(ctx, claims.SpaceKey{Owner: teststack.Alice.ID, Namespace: "orders", Instance: instance}); err != nil || len(gs) != 0 {
		t.Fatalf("grants left: %+v %v", gs, err)
	}
}

// A blocked turn that is cancelled withdraws its waiter: session A holds a
// write claim, B blocks on it, C blocks behind B; B is cancelled; A's
// release names C, and C's turn is granted and completes. The broker's
// clock stands still, so B's waiter cannot have left by its TTL.
func TestClaimsCancelledWaiterIsWithdrawn(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	srv := newOrderServer(t, 0)
	instance := ids.New("i")
	agent := refundAgent(t, refundOne, refundTool(srv, instance, true), turn.Limits{Budget: 30 * time.Second})
	inv, b := claimed(t, agent, time.Second)
	frozen := time.Now()
	b.Clock = func() time.Time { return frozen }
	order := []claims.Claim{{Namespace: "orders", Instance: instance, Key: "o1", Access: claims.Write}}
	a := newSession(t, inv, "Refund o1.")
	holder := claims.Request{ID: claims.GrantID(a, "tc_a"), Owner: teststack.Alice.ID, Session: a, Turn: "turn_a", ToolCall: "tc_a",
		Claims: order, Deadline: frozen.Add(time.Hour)}
	adm, err := b.Acquire(ctx, holder)
	if err != nil || adm.Outcome != claims.Granted {
		t.Fatalf("a: %+v %v", adm, err)
	}
	bs, cs := newSession(t, inv, "Refund o1 too."), newSession(t, inv, "Refund o1 as well.")
	for _, id := range []string{bs, cs} {
		if out, err := inv.runner.Start(ctx, id); err != nil || out.Cause != reducer.CauseBlocked {
			t.Fatalf("session %s: %+v %v, want blocked", id, out, err)
		}
	}
	if st := teststack.Load(t, inv.sessions, cs); st.Turn.Block.Ahead != 1 {
		t.Fatalf("c's block %+v, want one waiter ahead (b)", st.Turn.Block)
	}
	if err := inv.sessions.Cancel(ctx, bs, operator, "no longer needed"); err != nil {
		t.Fatal(err)
	}
	if _, ws, err := b.Grants(ctx, claims.SpaceKey{Owner: teststack.Alice.ID, Namespace: "orders", Instance: instance}); err != nil || len(ws) != 1 || ws[0].Session != cs {
		t.Fatalf("queue after b's cancel: %+v %v, want only c", ws, err)
	}
	ready, err := b.Release(ctx, adm.Grant)
	if err != nil || len(ready) != 1 || ready[0].Session != cs {
		t.Fatalf("a's release: ready %+v %v, want c", ready, err)
	}
	if out, err := inv.runner.Resume(ctx, cs); err != nil || out.Kind != turn.Completed {
		t.Fatalf("c after a's release: %+v %v, want completed", out, err)
	}
	if runs, _ := srv.report(); runs["o1"] != 1 {
		t.Fatalf("runs = %v, want c's one refund", runs)
	}
}

// cancelOnBlock is a broker that cancels the asking session's turn right
// after answering that it must wait: the cancel lands between the answer
// and the turn's suspension.
type cancelOnBlock struct {
	*claimsdb.Broker
	cancel func(ctx context.Context, session string)
}

func (c cancelOnBlock) Acquire(ctx context.Context, req claims.Request) (claims.Admission, error) {
	adm, err := c.Broker.Acquire(ctx, req)
	if err == nil && adm.Outcome != claims.Granted {
		c.cancel(ctx, req.Session)
	}
	return adm, err
}

// A turn cancelled after the broker queued it and before its suspension was
// written does not leave its waiter queued either: the runner, finding its
// turn ended, withdraws it.
func TestClaimsCancelBeforeTheSuspensionWithdraws(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	srv := newOrderServer(t, 0)
	instance := ids.New("i")
	agent := refundAgent(t, refundOne, refundTool(srv, instance, true), turn.Limits{Budget: 30 * time.Second})
	inv, b := claimed(t, agent, time.Second)
	inv.sessions.Claims = nil // only the runner may withdraw here
	inv.runner.Claims = cancelOnBlock{Broker: b, cancel: func(ctx context.Context, id string) {
		if err := inv.sessions.Cancel(ctx, id, operator, "stop"); err != nil {
			t.Errorf("cancel: %v", err)
		}
	}}
	a := newSession(t, inv, "Refund o1.")
	order := []claims.Claim{{Namespace: "orders", Instance: instance, Key: "o1", Access: claims.Write}}
	if adm, err := b.Acquire(ctx, claims.Request{ID: claims.GrantID(a, "tc_a"), Owner: teststack.Alice.ID, Session: a, Claims: order,
		Deadline: time.Now().Add(time.Hour)}); err != nil || adm.Outcome != claims.Granted {
		t.Fatalf("a: %+v %v", adm, err)
	}
	other := newSession(t, inv, "Refund o1 too.")
	out, err := inv.runner.Start(ctx, other)
	if err != nil || out.Kind != turn.Superseded {
		t.Fatalf("cancelled while blocked: %+v %v, want superseded", out, err)
	}
	if st := teststack.Load(t, inv.sessions, other); st.Turn != nil || st.Last != reducer.TurnCancelled {
		t.Fatalf("session %s %+v, want its turn cancelled", st.Last, st.Turn)
	}
	if _, ws, err := b.Grants(ctx, claims.SpaceKey{Owner: teststack.Alice.ID, Namespace: "orders", Instance: instance}); err != nil || len(ws) != 0 {
		t.Fatalf("waiters left: %+v %v, want none", ws, err)
	}
}

// midRefund is a session whose refund of o1 is running (hanging) at the
// order server when its invocation dies, holding the refund's one grant.
type midRefund struct {
	srv      *orderServer
	instance string
	inv      *invocation
	b        *claimsdb.Broker
	a, gid   string
	lease    time.Time // the dead invocation's
}

// killedMidRefund starts a refund session and kills its invocation once
// the refund has started at the server.
func killedMidRefund(t *testing.T, ctx context.Context) midRefund {
	t.Helper()
	srv := newOrderServer(t, 0)
	srv.hang = true
	lim := turn.Limits{Budget: 2 * time.Second, Margin: 100 * time.Millisecond, LeaseGrace: 10 * time.Millisecond}
	instance := ids.New("i")
	agent := refundAgent(t, refundOne, refundTool(srv, instance, true), lim)
	inv, b := claimed(t, agent, 2*time.Second)
	a := newSession(t, inv, "Refund o1.")
	dying, kill := context.WithCancel(ctx)
	go func() { <-srv.started; kill() }()
	if _, err := inv.runner.Start(dying, a); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed run: %v", err)
	}
	sa := teststack.Load(t, inv.sessions, a)
	if len(sa.Grants) != 1 {
		t.Fatalf("grants = %+v", sa.Grants)
	}
	gid := sa.Grants[0].ID
	return midRefund{srv: srv, instance: instance, inv: inv, b: b, a: a, gid: gid, lease: sa.Turn.Lease}
}
