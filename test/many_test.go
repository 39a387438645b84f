package test

// Many sessions at once: BATON_SESSIONS sessions (100 by default; the issue's
// full run is BATON_SESSIONS=1000) each run a turn through the real resume
// bootstraps: a step that calls an idempotent HTTP write tool needing
// approval, the approval answered through the operator API, the tool's run,
// and a closing step. A fleet of resume processes takes the wake queue, and
// some of them are SIGKILLed mid-invocation (a tenth of the session count by
// default, BATON_KILLS); the tick, fired every second, reaps the dead turns
// and re-sends wakes lost with the killed batches. The turns start from a
// schedule all sessions share: every session is due at the same
// millisecond, and one tick run must post every message, moving each head
// in the due index as it pages. Every turn must
// complete with dense facts, one approval, and one tool effect counted at
// the tool's own server.
//
//	go test ./test -run ManySessions -v
//	BATON_SESSIONS=1000 go test ./test -run ManySessions -v -timeout 40m

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/test/harness"
)

// Environment variables of the many-sessions run.
const (
	envSessions = "BATON_SESSIONS"
	envKills    = "BATON_KILLS"
)

// manyWakeGrace is how long the tick leaves a wake in the queue before it
// re-sends it, for n sessions: 15 ms a session, at least 3 s. The other
// stacks' 1 s re-sends most wakes of a burst of 1,000 still queued behind
// each other, which measures the duplicates; 15 s for 1,000 is still far
// under the deployed 2 minutes.
func manyWakeGrace(n int) time.Duration {
	return max(3*time.Second, time.Duration(n)*15*time.Millisecond)
}

// defaultSessions is the session count of a plain test run.
const defaultSessions = 100

// manyFleet is the number of resume processes taking the wake queue.
const manyFleet = 4

// manyTool is the many agent's one tool: an idempotent write that always
// needs approval.
const manyTool = "apply"

func envCount(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
}

// effectServer is the tool's own server. It applies an effect once per
// idempotency key, as an idempotent API does, and counts by session (the
// key's first segment) the requests and the distinct effects.
type effectServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests map[string]int
	effects  map[string]map[string]bool // session → keys applied
}

func newEffectServer(t *testing.T) *effectServer {
	es := &effectServer{requests: map[string]int{}, effects: map[string]map[string]bool{}}
	es.srv = httptest.NewServer(http.HandlerFunc(es.serve))
	t.Cleanup(es.srv.Close)
	return es
}

func (es *effectServer) serve(w http.ResponseWriter, r *http.Request) {
	var env struct {
		IdempotencyKey string `json:"idempotencyKey"`
	}
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil || env.IdempotencyKey == "" {
		http.Error(w, "no idempotency key", http.StatusBadRequest)
		return
	}
	session, _, _ := strings.Cut(env.IdempotencyKey, "/")
	es.mu.Lock()
	es.requests[session]++
	if es.effects[session] == nil {
		es.effects[session] = map[string]bool{}
	}
	es.effects[session][env.IdempotencyKey] = true
	es.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"applied":true}`))
}

func (es *effectServer) counts(session string) (requests, effects int) {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.requests[session], len(es.effects[session])
}

// writeManyAgents writes the many agent's file and script and returns the
// file's path.
func writeManyAgents(t *testing.T, es *effectServer) string {
	t.Helper()
	dir := t.TempDir()
	sc := `{"steps": [
  {"delay": "20ms", "text": "I will apply the change; an operator approves it first.", "toolCalls": [{"name": "apply", "input": {"change": "ship"}}]},
  {"delay": "20ms", "text": "Applied."}
]}`
	agents := fmt.Sprintf(`{"agents": {"many": {
  "provider": "scripted", "script": "many.script.json",
  "system": "You are baton's many-sessions agent: one approved write per turn.",
  "tools": [{"name": %q, "kind": "http", "description": "Apply a change; safe to repeat with the same idempotency key.",
    "schema": {"type": "object"}, "effect": "write", "idempotent": true, "url": %q, "timeout": "5s", "approval": "always"}],
  "maxOutputTokens": 256,
  "limits": {"budget": "1500ms", "margin": "300ms", "leaseGrace": "200ms", "maxStepsPerInvocation": 20, "maxStepsPerTurn": 50, "approvalTTL": "30m"}
}}}`, manyTool, es.srv.URL+"/"+manyTool)
	for name, body := range map[string]string{"many.script.json": sc, "agents.json": agents} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "agents.json")
}

// fleetMember is one resume process slot: a pump loop invoking its current
// process with batches from the wake queue, restarted after a kill.
type fleetMember struct {
	n    int
	mu   sync.Mutex
	f    *harness.Function
	gen  int
	busy atomic.Bool
}

func (m *fleetMember) current() *harness.Function {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.f
}

// manyRun is the state of one many-sessions run.
type manyRun struct {
	t     *testing.T
	s     *stack
	es    *effectServer
	arn   string
	fleet []*fleetMember
	kills atomic.Int64
	began time.Time
	// release is closed when the pumps may take wakes; done when every
	// session's turn ended.
	release, done chan struct{}

	tickMu   sync.Mutex
	tickRuns int
	tickSeen int
	tickTime time.Duration
	// reaped and rewoken by those runs
	tickReaped, tickRewoken int

	// Re-sent wakes (reason rewake) that reached a resume process, and
	// those after which the session's head had not moved: no-ops, the
	// wake they re-sent was not lost, only slow.
	resentMu                    sync.Mutex
	resentDelivered, resentNoop int
	resentSessions              map[string]int
}

func TestManySessions(t *testing.T) {
	t.Parallel()
	n := envCount(t, envSessions, defaultSessions)
	kills := envCount(t, envKills, n/10)
	es := newEffectServer(t)
	s := newStack(t, stackConfig{agents: writeManyAgents(t, es), timeout: 3*time.Minute + time.Duration(n)*time.Second, wakeGrace: manyWakeGrace(n)})
	out, err := s.emu.Clients.SQS.GetQueueAttributes(s.ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(s.res.QueueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &manyRun{t: t, s: s, es: es, arn: out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], release: make(chan struct{}), done: make(chan struct{})}
	// The stack's own pump idles once its resume process is gone: the
	// fleet's pumps take the queue instead.
	if err := s.resume.Load().Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()
	for i := range manyFleet {
		m := &fleetMember{n: i, f: s.start("resume", fmt.Sprintf("resume-m%d", i), resumeTimeout)}
		r.fleet = append(r.fleet, m)
		bg.Go(func() { r.pump(ctx, m) })
	}

	// All sessions due at once, at the same millisecond: one tick run
	// posts every schedule's message, moving each head in the index while
	// it pages, and sends their wakes; the pumps hold the queue meanwhile.
	r.began = time.Now()
	ids, _ := r.startSessions(ctx, n)
	r.tickAll(ctx, n)

	began := time.Now()
	close(r.release)
	bg.Go(func() { r.killer(ctx, kills, 30*time.Millisecond) })
	bg.Go(func() { r.ticks(ctx) })
	r.answerAll(ctx, ids)
	took := time.Since(began)
	cancel()
	r.check(ids, took)
}

// tickAll fires the tick once with n schedules due and measures its run,
// which must post every one.
func (r *manyRun) tickAll(ctx context.Context, n int) {
	rep, took, err := r.tick(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("tick with %d schedules due at once: %+v in %v: %.0f sessions/s", n, rep, took.Round(time.Millisecond), float64(rep.Seen)/took.Seconds())
	if rep.Seen != n || rep.Posted != n || rep.Stopped || rep.Errors != 0 {
		r.t.Fatalf("the tick saw %d and posted %d of %d schedules due", rep.Seen, rep.Posted, n)
	}
}

// startSessions creates n sessions of the many agent through the operator
// API, 16 requests at a time, and gives each a daily schedule whose
// occurrence, the same for all, is due already; it returns the ids and
// that occurrence.
func (r *manyRun) startSessions(ctx context.Context, n int) ([]string, time.Time) {
	ids := make([]string, n)
	r.each(ctx, n, func(i int) error {
		var v api.Session
		if err := r.api(ctx, http.StatusCreated, "POST", "/sessions", `{"agent":"many"}`, &v); err != nil {
			return fmt.Errorf("create session %d: %w", i, err)
		}
		ids[i] = v.ID
		return nil
	})
	// Every schedule is set as of a second before this minute began (a
	// store whose clock says so), so its daily occurrence is this minute's
	// start, due now: the tick posts them all without the test waiting for
	// a minute to turn. Through the session store, as the operator does:
	// template.yaml routes no PUT /sessions/{id}/schedule.
	at := time.Now().UTC().Truncate(time.Minute)
	cron := fmt.Sprintf("%d %d * * *", at.Minute(), at.Hour())
	sched := session.New(dynamo.New(r.s.emu.Clients.DynamoDB, r.s.res.Table), streams.New(r.s.emu.Clients.S3, r.s.res.Bucket))
	sched.Now = func() time.Time { return at.Add(-time.Second) }
	op := reducer.Actor{Kind: reducer.ActorOperator, ID: alice}
	r.each(ctx, n, func(i int) error {
		return sched.SetSchedule(ctx, ids[i], op, cron, "Apply it.")
	})
	return ids, at
}

// each runs f(0) to f(n-1), 16 at a time, and fails the test after them if
// any failed.
func (r *manyRun) each(ctx context.Context, n int, f func(int) error) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	var failed atomic.Int64
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(i); err != nil {
				r.t.Error(err)
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		r.t.FailNow()
	}
}

// api sends a request through API Gateway as alice and decodes the answer
// into out (when not nil); a status other than want is an error.
func (r *manyRun) api(ctx context.Context, want int, method, path, body string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := r.s.api.NewRequest(ctx, method, path, rd)
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+bearer(r.t, alice))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s, want %d", method, path, resp.StatusCode, bytes.TrimSpace(b), want)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// answerAll sweeps the sessions until every turn has ended: a session whose
// head says it waits for an approval gets it approved through the API.
func (r *manyRun) answerAll(ctx context.Context, ids []string) {
	defer close(r.done)
	answered := map[string]bool{}
	open := slices.Clone(ids)
	for len(open) > 0 {
		if ctx.Err() != nil {
			r.t.Errorf("%d sessions still open when the run ended: %v", len(open), ctx.Err())
			return
		}
		var mu sync.Mutex
		var still []string
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, id := range open {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				ended, err := r.visit(ctx, id, answered[id], func() {
					mu.Lock()
					answered[id] = true
					mu.Unlock()
				})
				if err != nil && ctx.Err() == nil {
					r.t.Logf("session %s: %v", id, err)
				}
				if !ended {
					mu.Lock()
					still = append(still, id)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		open = still
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// visit looks at one session: it reports whether its turn ended, and
// approves its pending approval once.
func (r *manyRun) visit(ctx context.Context, id string, answered bool, mark func()) (bool, error) {
	h, err := r.s.store.Head(ctx, id)
	if err != nil {
		return false, err
	}
	idle := h.Status == reducer.Idle && h.LastSeq > 4 // past the schedule's message
	if !idle && (answered || h.Status != reducer.Suspended || h.Cause != reducer.CauseApproval) {
		return false, nil
	}
	facts, err := r.s.store.Facts(ctx, id, 0)
	if err != nil || idle {
		return idle && len(facts) > 0 && facts[len(facts)-1].Ends(), err
	}
	reqs := ofType(facts, reducer.ApprovalRequested)
	if len(reqs) == 0 || reqs[0].Approval == nil {
		return false, nil
	}
	if err := r.api(ctx, http.StatusAccepted, "POST", "/sessions/"+id+"/approvals/"+reqs[0].Approval.ID, `{"decision":"approve"}`, nil); err != nil {
		return false, err
	}
	mark()
	return false, nil
}

// pump is Lambda's SQS event source mapping for one fleet member: it
// receives batches, invokes the member's process with them, and deletes the
// records not reported failed. When the process died it starts another.
func (r *manyRun) pump(ctx context.Context, m *fleetMember) {
	sqsc, url := r.s.emu.Clients.SQS, aws.String(r.s.res.QueueURL)
	select {
	case <-r.release:
	case <-ctx.Done():
		return
	}
	for ctx.Err() == nil {
		f := m.current()
		select {
		case <-f.Exited():
			m.mu.Lock()
			m.gen++
			nf, err := r.s.tryStart("resume", fmt.Sprintf("resume-m%d-g%d", m.n, m.gen), resumeTimeout)
			if err == nil {
				m.f = nf
			}
			m.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				r.t.Errorf("restart resume %d: %v", m.n, err)
				return
			}
			continue
		default:
		}
		out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil || len(out.Messages) == 0 {
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		payload, err := json.Marshal(harness.SQSEvent(out.Messages, r.arn, harness.Region))
		if err != nil {
			r.t.Errorf("pump: %v", err)
			return
		}
		resent := r.resentHeads(ctx, out.Messages)
		m.busy.Store(true)
		ictx, cancel := context.WithTimeout(ctx, resumeTimeout+5*time.Second)
		res, err := f.Invoke(ictx, payload)
		cancel()
		m.busy.Store(false)
		if err != nil {
			continue // the batch stays in flight, as on AWS
		}
		r.countResent(ctx, resent)
		var resp events.SQSEventResponse
		if err := json.Unmarshal(res, &resp); err != nil {
			r.t.Errorf("pump: resume answered %s: %v", res, err)
			continue
		}
		failed := map[string]bool{}
		for _, bf := range resp.BatchItemFailures {
			failed[bf.ItemIdentifier] = true
		}
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		for _, msg := range out.Messages {
			if !failed[aws.ToString(msg.MessageId)] {
				_, _ = sqsc.DeleteMessage(dctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: msg.ReceiptHandle})
			}
		}
		dcancel()
	}
}

// resentHeads is the last seq of each session a re-sent wake among msgs
// is for, read before the batch is handled.
func (r *manyRun) resentHeads(ctx context.Context, msgs []sqstypes.Message) map[string]int64 {
	out := map[string]int64{}
	for _, msg := range msgs {
		w, err := wake.Parse(aws.ToString(msg.Body))
		if err != nil || w.Reason != wake.Rewake {
			continue
		}
		if h, err := r.s.store.Head(ctx, w.Session); err == nil {
			out[w.Session] = h.LastSeq
		}
	}
	return out
}

// countResent counts the re-sent wakes of a handled batch, and those after
// which their session's head had not moved.
func (r *manyRun) countResent(ctx context.Context, before map[string]int64) {
	for id, seq := range before {
		h, err := r.s.store.Head(ctx, id)
		if err != nil {
			continue
		}
		r.resentMu.Lock()
		r.resentDelivered++
		if h.LastSeq == seq {
			r.resentNoop++
		}
		if r.resentSessions == nil {
			r.resentSessions = map[string]int{}
		}
		r.resentSessions[id]++
		r.resentMu.Unlock()
	}
}

// killer SIGKILLs up to kills fleet processes that are mid-invocation, one
// about every interval, until the run ends.
func (r *manyRun) killer(ctx context.Context, kills int, interval time.Duration) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for int(r.kills.Load()) < kills {
		if !sleepCtx(ctx, time.Duration(rng.Int64N(int64(interval)))+time.Millisecond) {
			return
		}
		select {
		case <-r.done:
			return
		default:
		}
		m := r.fleet[rng.IntN(len(r.fleet))]
		if !m.busy.Load() {
			continue
		}
		if err := m.current().Kill(); err == nil {
			r.kills.Add(1)
		}
	}
}

// ticks fires the tick function every second, as its schedule would every
// minute, and adds up what the runs saw and how long they took.
func (r *manyRun) ticks(ctx context.Context) {
	for sleepCtx(ctx, time.Second) {
		rep, took, err := r.tick(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.t.Error(err)
			}
			return
		}
		r.tickMu.Lock()
		r.tickRuns++
		r.tickSeen += rep.Seen
		r.tickTime += took
		r.tickReaped += rep.Reaped
		r.tickRewoken += rep.Rewoken
		r.tickMu.Unlock()
	}
}

// tick invokes the tick function with an EventBridge scheduled event and
// returns its report and the invocation's time.
func (r *manyRun) tick(ctx context.Context) (tick.Report, time.Duration, error) {
	ev, err := harness.ScheduledEvent("arn:aws:events:"+harness.Region+":"+harness.Account+":rule/"+r.s.id+"-tick", harness.Region, time.Now())
	if err != nil {
		return tick.Report{}, 0, err
	}
	tctx, cancel := context.WithTimeout(ctx, tickTimeout)
	defer cancel()
	began := time.Now()
	out, err := r.s.tick.Invoke(tctx, ev)
	took := time.Since(began)
	if err != nil {
		return tick.Report{}, took, fmt.Errorf("tick: %w %s", err, out)
	}
	var rep tick.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		return tick.Report{}, took, fmt.Errorf("tick report %s: %w", out, err)
	}
	return rep, took, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// check reads every session's facts and the tool server's counts, and
// reports completed, lost and doubled sessions, the kills, latencies and
// the tick's throughput.
func (r *manyRun) check(ids []string, took time.Duration) {
	t := r.t
	ctx := context.WithoutCancel(r.s.ctx)
	var completed, lost, doubled, requests, leases int
	var wakeToResume, postToStart []time.Duration
	for _, id := range ids {
		facts, err := r.s.store.Facts(ctx, id, 0)
		if err != nil {
			t.Errorf("facts of %s: %v", id, err)
			lost++
			continue
		}
		leases += len(suspended(facts, reducer.CauseLease))
		req, effects := r.es.counts(id)
		requests += req
		problems := manyProblems(facts, effects)
		switch {
		case len(problems) == 0:
			completed++
		case effects > 1 || len(ofType(facts, reducer.TurnCompleted)) > 1:
			doubled++
		default:
			lost++
		}
		if len(problems) > 0 && lost+doubled <= 10 {
			t.Errorf("session %s: %s; facts: %s", id, strings.Join(problems, "; "), summary(facts))
		}
		if d, ok := between(facts, reducer.ApprovalAnswered, reducer.TurnResumed); ok {
			wakeToResume = append(wakeToResume, d)
		}
		if d, ok := between(facts, reducer.MessageReceived, reducer.TurnStarted); ok {
			postToStart = append(postToStart, d)
		}
	}
	r.tickMu.Lock()
	defer r.tickMu.Unlock()
	rate := 0.0
	if r.tickTime > 0 {
		rate = float64(r.tickSeen) / r.tickTime.Seconds()
	}
	t.Logf("%d sessions in %v through %d resume processes: completed %d, lost %d, doubled %d; kills %d, turns reaped after them %d; tool requests %d",
		len(ids), took.Round(time.Millisecond), manyFleet, completed, lost, doubled, r.kills.Load(), leases, requests)
	t.Logf("wake (approval answered, SQS send) to turn.resumed: p50 %v, p99 %v (%d); the tick's message to turn.started: p50 %v, p99 %v",
		quantile(wakeToResume, 0.5), quantile(wakeToResume, 0.99), len(wakeToResume), quantile(postToStart, 0.5), quantile(postToStart, 0.99))
	t.Logf("ticks during the run: %d runs looked at %d due heads in %v (%.0f sessions/s), reaped %d, re-sent %d wakes",
		r.tickRuns, r.tickSeen, r.tickTime.Round(time.Millisecond), rate, r.tickReaped, r.tickRewoken)
	r.resentMu.Lock()
	t.Logf("re-sent wakes handled: %d, for %d sessions; no-ops (the session's head did not move) %d",
		r.resentDelivered, len(r.resentSessions), r.resentNoop)
	r.resentMu.Unlock()
	if completed != len(ids) {
		t.Errorf("%d of %d sessions completed (%d lost, %d doubled)", completed, len(ids), lost, doubled)
	}
}

// manyProblems checks one session's facts and its effects at the tool's
// server: dense facts, one turn that completed after one approved approval,
// every suspension resumed once, and exactly one effect.
func manyProblems(facts []reducer.Fact, effects int) []string {
	var out []string
	for i, f := range facts {
		if f.Seq != int64(i+1) {
			out = append(out, fmt.Sprintf("fact %d has seq %d", i+1, f.Seq))
			break
		}
	}
	for typ, want := range map[reducer.Type]int{
		reducer.ScheduleFired: 1, reducer.MessageReceived: 1, reducer.TurnStarted: 1, reducer.ApprovalRequested: 1, reducer.ApprovalAnswered: 1, reducer.TurnCompleted: 1,
		reducer.TurnFailed: 0, reducer.TurnCancelled: 0,
	} {
		if got := len(ofType(facts, typ)); got != want {
			out = append(out, fmt.Sprintf("%d %s, want %d", got, typ, want))
		}
	}
	for i, f := range facts {
		if f.Type != reducer.TurnSuspended {
			continue
		}
		resumed := 0
		for _, g := range facts[i+1:] {
			if g.Type == reducer.TurnSuspended || g.Ends() {
				break
			}
			if g.Type == reducer.TurnResumed {
				resumed++
			}
		}
		if resumed != 1 {
			out = append(out, fmt.Sprintf("suspension at %d resumed %d times", f.Seq, resumed))
		}
	}
	if len(facts) == 0 || !facts[len(facts)-1].Ends() {
		out = append(out, "the turn did not end")
	}
	if effects != 1 {
		out = append(out, fmt.Sprintf("%d tool effects, want 1", effects))
	}
	return out
}

// between is the time from the first fact of type from to the first fact of
// type to after it.
func between(facts []reducer.Fact, from, to reducer.Type) (time.Duration, bool) {
	for i, f := range facts {
		if f.Type != from {
			continue
		}
		for _, g := range facts[i+1:] {
			if g.Type == to {
				return g.Time.Sub(f.Time), true
			}
		}
		return 0, false
	}
	return 0, false
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))].Round(time.Millisecond)
}
