package test

// Crash trials: the resume bootstrap is SIGKILLed at random points of a turn
// whose steps call a read tool, an idempotent write tool and a
// non-idempotent external tool, all served by an httptest server in this
// process that records every call it gets. The tick reaps the dead
// invocation, SQS delivery resumes the turn in a fresh process, and the test
// answers an uncertain execution with rerun or abandon, alternately. Some
// trials kill twice: during a call and again during its rerun, the
// idempotent write's own or the external call's after a rerun verdict.
// Every trial must complete with each scripted step exactly once in the
// rebuilt conversation, dense facts, and the external call run at most once
// plus once per rerun verdict for it.
//
//	go test ./test/ -run Crash -v                                   # 20 trials
//	BATON_CRASH_TRIALS=200 go test ./test/ -run Crash -v -timeout 30m
//	BATON_CRASH_SEED=<seed> ...                                     # replay the choices of a run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/tool/remote"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// Environment variables of the crash trials.
const (
	envCrashTrials = "BATON_CRASH_TRIALS"
	envCrashSeed   = "BATON_CRASH_SEED"
)

// defaultCrashTrials is the number of trials of a plain test run.
const defaultCrashTrials = 20

// The crash agent's tools, by effect.
const (
	readTool     = "lookup" // effect read
	writeTool    = "upsert" // effect write, idempotent
	externalTool = "charge" // effect external, not idempotent
)

// crashPrompt is the user message of every trial.
const crashPrompt = "Ship order 41 to Rua Augusta 1 and charge the difference."

// --- the tool server ---

// toolCall is one request the tool server received.
type toolCall struct {
	Tool   string // the URL path: the tool's name
	Ref    string // the scripted call's marker (input.ref)
	Input  json.RawMessage
	CallID string // the envelope's toolCallId
	Key    string // the Idempotency-Key header
	EnvKey string // the envelope's idempotencyKey
	N      int    // this request's number among those for Ref, from 1
	At     time.Time
	// Answered is when the answer was written; zero if the caller went
	// away first, and Gone is when it did.
	Answered, Gone time.Time
	Answer         json.RawMessage
}

// toolServer serves the crash agent's three HTTP tools. It records a call
// (the side effect) as the request arrives, waits its latency, then
// answers. Trials run one at a time; begin starts a trial's record.
type toolServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	latency time.Duration
	calls   []*toolCall
	armRef  string
	arrived []chan struct{} // arrived[i] is closed when call i+1 for armRef arrives
}

func newToolServer(t *testing.T) *toolServer {
	ts := &toolServer{}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *toolServer) url(name string) string { return ts.srv.URL + "/" + name }

func (ts *toolServer) serve(w http.ResponseWriter, r *http.Request) {
	var env remote.Envelope
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in struct {
		Ref string `json:"ref"`
	}
	_ = json.Unmarshal(env.Input, &in)
	c := &toolCall{
		Tool: strings.TrimPrefix(r.URL.Path, "/"), Ref: in.Ref, Input: env.Input, CallID: env.ToolCallID,
		Key: r.Header.Get("Idempotency-Key"), EnvKey: env.IdempotencyKey, At: time.Now(),
	}
	ts.mu.Lock()
	for _, o := range ts.calls {
		if o.Ref == c.Ref {
			c.N++
		}
	}
	c.N++
	c.Answer, _ = json.Marshal(map[string]any{"ok": true, "tool": c.Tool, "ref": c.Ref, "n": c.N})
	ts.calls = append(ts.calls, c)
	latency := ts.latency
	if c.Ref == ts.armRef && c.N <= len(ts.arrived) {
		close(ts.arrived[c.N-1])
	}
	ts.mu.Unlock()

	select {
	case <-time.After(latency):
	case <-r.Context().Done():
		// The caller died: the effect happened, the answer is lost.
		ts.mu.Lock()
		c.Gone = time.Now()
		ts.mu.Unlock()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(c.Answer); err != nil {
		return
	}
	ts.mu.Lock()
	c.Answered = time.Now()
	ts.mu.Unlock()
}

// begin clears the record for a new trial with the given latency. When
// armRef is not empty, the i-th returned channel is closed as call i+1
// for that ref arrives, for the first n calls.
func (ts *toolServer) begin(latency time.Duration, armRef string, n int) []<-chan struct{} {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.calls, ts.latency, ts.armRef, ts.arrived = nil, latency, armRef, nil
	if armRef == "" {
		return nil
	}
	out := make([]<-chan struct{}, n)
	for i := range n {
		ts.arrived = append(ts.arrived, make(chan struct{}))
		out[i] = ts.arrived[i]
	}
	return out
}

// snapshot returns copies of the calls recorded so far.
func (ts *toolServer) snapshot() []toolCall {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]toolCall, len(ts.calls))
	for i, c := range ts.calls {
		out[i] = *c
	}
	return out
}

// --- the agent ---

// writeAgentsFile writes f as dir's agents.json and returns its path.
func writeAgentsFile(t *testing.T, dir string, f agents.File) string {
	t.Helper()
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeCrashAgents writes an agent file declaring the crash agent, whose
// HTTP tools point at ts, next to a copy of its script, and returns its path.
func writeCrashAgents(t *testing.T, ts *toolServer) string {
	t.Helper()
	dir := t.TempDir()
	sc, err := os.ReadFile(testdataPath(t, "crash.script.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crash.script.json"), sc, 0o644); err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`)
	decl := func(name, desc, effect string, idempotent bool) agents.ToolRef {
		return agents.ToolRef{Name: name, Decl: &agents.Decl{
			Name: name, Kind: "http", Description: desc, Schema: schema,
			Effect: effect, Idempotent: idempotent, URL: ts.url(name), Timeout: "5s",
		}}
	}
	f := agents.File{Agents: map[string]agents.Config{
		"crash": {
			Provider: "scripted",
			Script:   json.RawMessage(`"crash.script.json"`),
			System:   "You are baton's crash-trial agent: you read, write idempotently, and charge once.",
			Tools: []agents.ToolRef{
				decl(readTool, "Look an order up.", "read", false),
				decl(writeTool, "Write an order field; safe to repeat with the same idempotency key.", "write", true),
				decl(externalTool, "Charge the customer's card. Not idempotent.", "external", false),
			},
			MaxOutputTokens: 1024,
			// A short budget and lease grace: the reaper may take a dead
			// invocation's turn about 1.1 s after the invocation began.
			// The live flush makes unfinished steps durable, so kills also
			// leave partial steps for the resume to drop.
			Limits: agents.Limits{Budget: "1s", Margin: "200ms", LeaseGrace: "100ms",
				MaxStepsPerInvocation: 20, MaxStepsPerTurn: 50, LiveFlush: "30ms"},
		},
	}}
	return writeAgentsFile(t, dir, f)
}

// --- the trials ---

// crashTrial is what one trial did and found.
type crashTrial struct {
	n       int
	session string
	latency time.Duration
	target  string        // the ref whose call the kill waited for, or "" for a timed kill
	delay   time.Duration // after the call arrived, or after the message was posted
	// again kills a second time, when the target's second run (its
	// rerun) arrives; rerunFirst answers the trial's first uncertain
	// execution with rerun, so that the external call's rerun can be killed.
	again, rerunFirst bool
	phase             string // where the kill landed, each kill's ";"-separated
	// killed is the last kill's time, zero for the control trial; kills
	// counts them.
	killed  time.Time
	kills   int
	ended   *reducer.Fact
	recover time.Duration // the last kill to the turn's end, when killed during the turn
	total   time.Duration // the message to the turn's end
	// verdicts given, by the call's ref, in order, and when.
	verdicts map[string][]verdictGiven

	// took is the trial's wall time; spawn, the start of the fresh resume
	// process; check, the checks after the turn ended.
	took, spawn, check time.Duration

	problems                 []string
	lost, duplicated, double int
	partial                  int // partial steps the stream marks abandoned
	idemRepeats              int // idempotent calls that ran more than once
	externalRuns             int // server-side runs of the external call
	// perVerdict is, for each verdict on the external call, the runs of
	// the call the tool server saw from the verdict to the next one (or
	// the end).
	perVerdict []verdictRuns
}

// verdictGiven is a verdict the trial gave, and when.
type verdictGiven struct {
	v  reducer.Verdict
	at time.Time
}

func (g verdictGiven) String() string { return string(g.v) }

// verdictRuns is a verdict and the runs that followed it.
type verdictRuns struct {
	v    reducer.Verdict
	runs int
}

// reruns counts the rerun verdicts given for ref.
func (tr *crashTrial) reruns(ref string) int {
	n := 0
	for _, g := range tr.verdicts[ref] {
		if g.v == reducer.Rerun {
			n++
		}
	}
	return n
}

// lastVerdict is the last verdict given for ref, if any.
func (tr *crashTrial) lastVerdict(ref string) (reducer.Verdict, bool) {
	vs := tr.verdicts[ref]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1].v, true
}

// nVerdicts counts the verdicts the trial gave.
func (tr *crashTrial) nVerdicts() int {
	n := 0
	for _, vs := range tr.verdicts {
		n += len(vs)
	}
	return n
}

func (tr *crashTrial) problem(format string, args ...any) {
	tr.problems = append(tr.problems, fmt.Sprintf(format, args...))
}

// crashRig is the stack, tool server and script the trials share.
type crashRig struct {
	t     *testing.T
	s     *stack
	ts    *toolServer
	sc    script
	rng   *rand.Rand
	spawn int // resume processes started after kills
	// uncertain counts the uncertain suspensions answered; even ones get
	// rerun, odd ones abandon.
	uncertain int
}

// TestCrashTrials kills the resume process at random points of a turn, lets
// the reaper and SQS delivery resume it, and checks that every turn
// completes with no step lost or duplicated and no non-idempotent side
// effect repeated without a rerun verdict. BATON_CRASH_TRIALS sets the
// number of trials (default 20), BATON_CRASH_SEED the seed of the random
// choices (printed by every run).
func TestCrashTrials(t *testing.T) {
	t.Parallel()
	trials, seed := trialsAndSeed(t, envCrashTrials, defaultCrashTrials, envCrashSeed)
	t.Logf("%d crash trials, seed %d (replay the choices with %s=%d)", trials, seed, envCrashSeed, seed)

	ts := newToolServer(t)
	s := newStack(t, stackConfig{
		agents:  writeCrashAgents(t, ts),
		timeout: 2*time.Minute + time.Duration(trials)*15*time.Second,
	})
	rig := &crashRig{t: t, s: s, ts: ts, sc: loadScript(t, testdataPath(t, "crash.script.json")),
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}

	// The control: a turn nobody kills. It must pass the same checks, and
	// it times the turn for the timed kills. (Even unkilled, a call cut by
	// a starved invocation's deadline is settled again by the next one.)
	control := rig.trial(0, nil)
	rig.report(control)
	if len(control.problems) > 0 {
		t.Fatalf("the control turn, not killed, fails the checks")
	}
	span := control.recover
	t.Logf("control turn: %v from message to completion", span.Round(time.Millisecond))

	var results []*crashTrial
	for i := 1; i <= trials; i++ {
		tr := rig.trial(i, &span)
		rig.report(tr)
		results = append(results, tr)
	}
	rig.summarize(results)
}

// trial runs one trial. span nil is the control, which is not killed;
// otherwise timed kills land within about span after the message.
func (rig *crashRig) trial(n int, span *time.Duration) *crashTrial {
	s, rng := rig.s, rig.rng
	tr := &crashTrial{n: n, verdicts: map[string][]verdictGiven{}}
	began := time.Now()
	defer func() { tr.took = time.Since(began) }()
	tr.latency = time.Duration(2+rng.IntN(39)) * time.Millisecond

	refs := rig.refs()
	if span != nil {
		// A fifth of the trials kill inside the external call, a fifth
		// inside a random call, a fifth at a random time of the turn; a
		// fifth kill inside the external call and again inside the rerun
		// an operator allows, and a fifth inside the idempotent write and
		// again inside its rerun.
		switch n % 5 {
		case 1:
			tr.target = rig.refOf(externalTool)
		case 2:
			tr.target = refs[rng.IntN(len(refs))]
		case 3:
			tr.target, tr.again, tr.rerunFirst = rig.refOf(externalTool), true, true
		case 4:
			tr.target, tr.again = rig.refOf(writeTool), true
		}
		if tr.target != "" {
			tr.delay = time.Duration(rng.Int64N(int64(tr.latency/2) + 1))
		} else {
			tr.delay = time.Duration(rng.Int64N(int64(*span)))
		}
	}
	kills := 1
	if tr.again {
		kills = 2
	}
	arrived := rig.ts.begin(tr.latency, tr.target, kills)

	id := s.createSession(alice, "crash")
	tr.session = id
	posted := time.Now()
	s.post(alice, id, crashPrompt)

	// The kill comes from its own goroutine, so that the turn is driven
	// (ticks, verdicts) while the kill waits for its moment: a turn can
	// need the tick before it reaches the call the kill waits for.
	done := make(chan struct{})
	var killer sync.WaitGroup
	var killErr error
	if span != nil {
		triggers := arrived
		if triggers == nil {
			at := make(chan struct{})
			timer := time.AfterFunc(time.Until(posted.Add(tr.delay)), func() { close(at) })
			defer timer.Stop()
			triggers = []<-chan struct{}{at}
		}
		killer.Go(func() {
			for _, trigger := range triggers {
				select {
				case <-trigger:
				case <-done:
					return // the turn ended first
				}
				if arrived != nil {
					time.Sleep(tr.delay)
				}
				if killErr = rig.kill(tr, id); killErr != nil {
					return
				}
			}
		})
	}
	tr.ended = rig.drive(tr, id)
	close(done)
	killer.Wait()
	if killErr != nil {
		rig.t.Fatalf("trial %d: kill: %v", n, killErr)
	}
	if span != nil && tr.killed.IsZero() {
		tr.phase = "not killed: the turn ended first"
	}
	if tr.ended == nil {
		return tr
	}
	tr.total = tr.ended.Time.Sub(posted)
	if span == nil {
		// The control's recover is its whole span, for the caller's timing.
		tr.recover = tr.total
	} else if !tr.killed.IsZero() && !strings.HasSuffix(tr.phase, "after the end") {
		tr.recover = tr.ended.Time.Sub(tr.killed)
	}
	checked := time.Now()
	rig.check(tr, id)
	tr.check = time.Since(checked)
	return tr
}

// refs returns the scripted calls' refs, in script order.
func (rig *crashRig) refs() []string {
	var out []string
	for _, st := range rig.sc.Steps {
		for _, c := range st.ToolCalls {
			out = append(out, refOfInput(c.Input))
		}
	}
	return out
}

// refOf returns the ref of the first scripted call of tool name.
func (rig *crashRig) refOf(name string) string {
	for _, st := range rig.sc.Steps {
		for _, c := range st.ToolCalls {
			if c.Name == name {
				return refOfInput(c.Input)
			}
		}
	}
	rig.t.Fatalf("the crash script calls no %s", name)
	return ""
}

func refOfInput(in json.RawMessage) string {
	var v struct {
		Ref string `json:"ref"`
	}
	_ = json.Unmarshal(in, &v)
	return v.Ref
}

// kill SIGKILLs the resume process, starts a fresh one as Lambda would for
// the next delivery, and records where the kill landed. It runs on a
// goroutine of its own, so it returns its errors.
func (rig *crashRig) kill(tr *crashTrial, id string) error {
	s := rig.s
	victim := s.resume.Load()
	signalled := time.Now()
	if err := victim.Kill(); err != nil {
		return err
	}
	killed := time.Now()
	calls := rig.ts.snapshot()
	rig.spawn++
	f, err := s.tryStart("resume", fmt.Sprintf("resume-k%d", rig.spawn), resumeTimeout)
	if err != nil {
		return err
	}
	s.resume.Store(f)
	tr.spawn = time.Since(killed)

	facts, err := s.store.Facts(s.ctx, id, 0)
	if err != nil {
		return fmt.Errorf("read facts of %s: %w", id, err)
	}
	var inFlight []string
	for _, c := range calls {
		ended := c.Answered
		if ended.IsZero() {
			ended = c.Gone
		}
		if c.At.Before(signalled) && (ended.IsZero() || ended.After(signalled)) {
			inFlight = append(inFlight, c.Tool)
		}
	}
	last := facts[len(facts)-1]
	var phase string
	switch {
	case len(ofType(facts, reducer.TurnStarted)) == 0:
		phase = "before the turn started"
	case last.Ends():
		phase = "after the end"
	case len(inFlight) > 0:
		phase = "during the " + strings.Join(inFlight, "+") + " call"
	case last.Type == reducer.TurnSuspended:
		phase = "after a suspension"
	default:
		// A model step, a flush, a fact being written, or the moments
		// between a call's answer and its durable result.
		phase = "between tool calls"
	}
	if tr.kills > 0 {
		phase = tr.phase + "; then " + phase
	}
	tr.phase, tr.killed = phase, killed
	tr.kills++
	return nil
}

// drive waits for the trial's turn to end, firing the tick when a lease has
// run out or a wake is overdue (as the one-minute schedule would, sooner)
// and answering an uncertain execution through the operator API. It returns
// the fact that ended the turn, or nil after a minute.
func (rig *crashRig) drive(tr *crashTrial, id string) *reducer.Fact {
	s := rig.s
	deadline := time.Now().Add(time.Minute)
	var lastTick time.Time
	answered := map[int64]bool{} // uncertain suspensions answered, by seq
	for time.Now().Before(deadline) {
		facts, err := s.store.Facts(s.ctx, id, 0)
		if err != nil {
			rig.t.Fatalf("read facts of %s: %v", id, err)
		}
		if len(facts) > 0 {
			if last := facts[len(facts)-1]; last.Ends() && len(ofType(facts, reducer.TurnStarted)) > 0 {
				return &last
			}
		}
		st, err := reducer.Reduce(facts)
		if err != nil {
			tr.problem("the facts do not reduce: %v: %s", err, summary(facts))
			return nil
		}
		now := time.Now()
		if st.Status == reducer.Suspended && st.Turn.Uncertain != nil && !answered[st.LastSeq] {
			answered[st.LastSeq] = true
			ex := st.Turn.Uncertain
			// Verdicts alternate, but a trial that kills the rerun
			// answers its first uncertain execution with rerun.
			v := reducer.Rerun
			if !tr.rerunFirst || tr.nVerdicts() > 0 {
				if rig.uncertain%2 == 1 {
					v = reducer.Abandon
				}
				rig.uncertain++
			}
			ref := rig.refOfStreamCall(id, st.Turn.Stream, ex.ToolCallID)
			tr.verdicts[ref] = append(tr.verdicts[ref], verdictGiven{v: v, at: time.Now()})
			var acc struct {
				Status string `json:"status"`
			}
			s.must(http.StatusAccepted, "POST", "/sessions/"+id+"/executions/"+url.PathEscape(ex.ID), alice,
				`{"verdict":"`+string(v)+`"}`, &acc)
			if acc.Status != string(v) {
				tr.problem("verdict %s accepted as %q", v, acc.Status)
			}
			continue
		}
		if n := st.Next(now, 0); !n.Due.IsZero() && now.Sub(lastTick) > 250*time.Millisecond {
			due := n.Due
			if n.Reason.Wake() {
				due = due.Add(wakeGrace)
			}
			if now.After(due.Add(20 * time.Millisecond)) {
				s.fireTick()
				lastTick = now
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	facts, _ := s.store.Facts(s.ctx, id, 0)
	tr.problem("the turn did not end within a minute: %s", summary(facts))
	return nil
}

// refOfStreamCall returns the ref of the call the turn's stream names
// callID, or "?" if no completed step of the stream calls it.
func (rig *crashRig) refOfStreamCall(id, stream, callID string) string {
	page, err := rig.s.store.ReadStream(rig.s.ctx, id, stream, "")
	if err != nil {
		rig.t.Fatalf("read stream %s: %v", stream, err)
	}
	for _, e := range page.Entries {
		if e.Part.Type == parts.ToolInputAvailable && e.Part.ToolCallID == callID {
			return refOfInput(e.Part.Input)
		}
	}
	return "?" + callID
}

// check asserts everything a trial must leave behind: the facts, the
// rebuilt conversation, the stream, and what the tool server saw.
func (rig *crashRig) check(tr *crashTrial, id string) {
	s := rig.s
	facts, err := s.store.Facts(s.ctx, id, 0)
	if err != nil {
		rig.t.Fatalf("read facts of %s: %v", id, err)
	}

	// Facts: dense from 1, one turn, completed, each suspension resumed once.
	for i, f := range facts {
		if f.Seq != int64(i+1) {
			tr.problem("fact %d has seq %d: the facts are not dense", i, f.Seq)
			break
		}
	}
	if tr.ended.Type != reducer.TurnCompleted {
		tr.problem("the turn ended with %s: %s", tr.ended.Type, summary(facts))
	}
	if n := len(ofType(facts, reducer.TurnStarted)); n != 1 {
		tr.problem("%d turn.started facts, want 1", n)
	}
	checkResumes(rig.t, facts)
	// One execution.started for each side effect, and one more for each
	// rerun an operator allowed: a rerun is recorded before it runs.
	var sideEffects []string
	for _, st := range rig.sc.Steps {
		for _, c := range st.ToolCalls {
			if c.Name != readTool {
				for range 1 + tr.reruns(refOfInput(c.Input)) {
					sideEffects = append(sideEffects, c.Name)
				}
			}
		}
	}
	var ledger []string
	for _, f := range ofType(facts, reducer.ExecutionStarted) {
		ledger = append(ledger, f.Execution.Tool)
	}
	if !slices.Equal(ledger, sideEffects) {
		tr.problem("execution.started for %v, want one for each side effect and rerun verdict %v", ledger, sideEffects)
	}
	if got, want := len(suspended(facts, reducer.CauseUncertain)), tr.nVerdicts(); got != want {
		tr.problem("%d uncertain suspensions, %d verdicts given", got, want)
	}
	if got, want := len(ofType(facts, reducer.ExecutionVerdict)), tr.nVerdicts(); got != want {
		tr.problem("%d execution.verdict facts, %d verdicts given", got, want)
	}

	// The rebuilt conversation: the snapshot the completed turn left, as
	// the next turn's model input would begin.
	sess, err := s.store.Load(s.ctx, id)
	if err != nil {
		rig.t.Fatalf("load %s: %v", id, err)
	}
	results := rig.checkConversation(tr, sess.History)

	// The stream: every step completed once, partial ones marked abandoned.
	turnID := ofType(facts, reducer.TurnStarted)[0].Stream
	page, err := s.store.ReadStream(s.ctx, id, turnID, "")
	if err != nil {
		rig.t.Fatalf("read stream %s: %v", turnID, err)
	}
	var ps []parts.Part
	for _, e := range page.Entries {
		ps = append(ps, e.Part)
	}
	if page.Closed != streams.Completed {
		tr.problem("stream closed %q, want completed", page.Closed)
	}
	completed, partial, _ := splitSteps(ps)
	tr.partial = partial
	if len(completed) != len(rig.sc.Steps) {
		tr.problem("%d completed steps in the stream, want %d: %s", len(completed), len(rig.sc.Steps), outline(ps))
	}
	if n := countParts(ps, parts.DataAbandoned); n != partial {
		tr.problem("%d partial steps but %d data-abandoned markers: %s", partial, n, outline(ps))
	}
	if n := countParts(ps, parts.Finish); n != 1 {
		tr.problem("%d finish parts, want 1", n)
	}
	// Each call of a completed step has exactly one result. The stream's
	// call ids need not be the conversation's: calls are matched by ref.
	streamCalls := map[string]string{} // stream call id -> ref
	for _, st := range completed {
		for _, p := range st {
			if p.Type == parts.ToolInputAvailable {
				streamCalls[p.ToolCallID] = refOfInput(p.Input)
			}
		}
	}
	var streamRefs []string
	for _, ref := range streamCalls {
		streamRefs = append(streamRefs, ref)
	}
	slices.Sort(streamRefs)
	if want := slices.Sorted(slices.Values(rig.refs())); !slices.Equal(streamRefs, want) {
		tr.problem("the stream's completed steps call %v, want %v", streamRefs, want)
	}
	outputs := map[string]int{}
	for _, p := range ps {
		switch p.Type {
		case parts.ToolOutputAvailable, parts.ToolOutputError, parts.ToolOutputDenied:
			outputs[p.ToolCallID]++
			if _, ok := streamCalls[p.ToolCallID]; !ok {
				tr.problem("a result for %s, which no completed step calls", p.ToolCallID)
			}
		}
	}
	for callID, ref := range streamCalls {
		if outputs[callID] != 1 {
			tr.problem("call %s (%s) has %d results in the stream, want 1", callID, ref, outputs[callID])
		}
	}

	rig.checkServer(tr, results)
}

// callResult is a tool call of the rebuilt conversation and its result.
type callResult struct {
	name, ref string
	result    *conversation.Content
}

// checkConversation compares the rebuilt conversation with the script:
// the user's message, then every step exactly once and in order, each
// tool call followed by its result. It counts lost and duplicated steps,
// and returns the calls by tool call id.
func (rig *crashRig) checkConversation(tr *crashTrial, history []conversation.Message) map[string]*callResult {
	calls := map[string]*callResult{}
	if len(history) == 0 || history[0].Role != conversation.User || len(history[0].Content) != 1 || history[0].Content[0].Text != crashPrompt {
		tr.problem("the conversation does not begin with the user's message: %+v", history[:min(1, len(history))])
	}
	var texts []string
	for i, m := range history {
		switch m.Role {
		case conversation.Assistant:
			var text string
			var ids []string
			for _, c := range m.Content {
				switch c.Type {
				case conversation.Text:
					text += c.Text
				case conversation.ToolCall:
					if _, dup := calls[c.ToolCallID]; dup {
						tr.problem("tool call %s appears twice in the conversation", c.ToolCallID)
					}
					calls[c.ToolCallID] = &callResult{name: c.ToolName, ref: refOfInput(c.Input)}
					ids = append(ids, c.ToolCallID)
				}
			}
			texts = append(texts, text)
			if len(ids) == 0 {
				continue
			}
			// The step's results follow it, in call order.
			var got []string
			if i+1 < len(history) && history[i+1].Role == conversation.ToolRole {
				for _, r := range history[i+1].Content {
					got = append(got, r.ToolCallID)
					if cr, ok := calls[r.ToolCallID]; ok && r.Type == conversation.ToolResult {
						cr.result = &r
					}
				}
			}
			if !slices.Equal(got, ids) {
				tr.problem("step %d's calls %v are followed by results for %v", len(texts), ids, got)
			}
		}
	}

	// Each scripted step by its text: found once, in order.
	var want []string
	for _, st := range rig.sc.Steps {
		want = append(want, st.Text)
		n := 0
		for _, got := range texts {
			if got == st.Text {
				n++
			}
		}
		switch {
		case n == 0:
			tr.lost++
			tr.problem("step %q is lost", st.Text)
		case n > 1:
			tr.duplicated += n - 1
			tr.problem("step %q appears %d times", st.Text, n)
		}
	}
	if !slices.Equal(texts, want) {
		tr.problem("assistant messages %q, want the script's %q", texts, want)
	}
	var gotCalls, wantCalls []string
	for _, m := range history {
		for _, c := range m.Content {
			if c.Type == conversation.ToolCall {
				gotCalls = append(gotCalls, c.ToolName+":"+refOfInput(c.Input))
			}
		}
	}
	for _, st := range rig.sc.Steps {
		for _, c := range st.ToolCalls {
			wantCalls = append(wantCalls, c.Name+":"+refOfInput(c.Input))
		}
	}
	if !slices.Equal(gotCalls, wantCalls) {
		tr.problem("tool calls %v, want %v", gotCalls, wantCalls)
	}
	return calls
}

// checkServer compares what the tool server saw with the conversation and
// the verdicts: a read may run again; an idempotent write may run again,
// always with the same key; the external call runs at most once plus once
// for each rerun verdict on it (always with the same key), at least once
// unless its last verdict is abandon, and not at all after an abandon. The
// result in the conversation is the answer to the last run, or the
// abandoned text.
func (rig *crashRig) checkServer(tr *crashTrial, calls map[string]*callResult) {
	runs := map[string][]toolCall{}
	for _, c := range rig.ts.snapshot() {
		runs[c.Ref] = append(runs[c.Ref], c)
		if c.Key == "" || c.Key != c.EnvKey {
			tr.problem("%s call %s #%d: Idempotency-Key %q, envelope key %q", c.Tool, c.Ref, c.N, c.Key, c.EnvKey)
		}
	}
	byRef := map[string]string{} // ref -> tool call id in the conversation
	for callID, cr := range calls {
		byRef[cr.ref] = callID
	}
	for ref := range runs {
		if _, ok := byRef[ref]; !ok {
			tr.problem("the tool server ran %q, which the conversation does not call", ref)
		}
	}
	for ref, callID := range byRef {
		cr := calls[callID]
		rs := runs[ref]
		v, hasVerdict := tr.lastVerdict(ref)
		if cr.name != readTool {
			keys := map[string]bool{}
			for _, r := range rs {
				keys[r.Key] = true
			}
			if len(keys) > 1 {
				tr.problem("%s %s ran %d times with %d different keys", cr.name, ref, len(rs), len(keys))
			}
		}
		lo, hi := 1, -1 // -1: no limit
		switch cr.name {
		case writeTool:
			if len(rs) > 1 {
				tr.idemRepeats++
			}
		case externalTool:
			tr.externalRuns = len(rs)
			// One verdict allows exactly one more run.
			hi = 1 + tr.reruns(ref)
			if hasVerdict && v == reducer.Abandon {
				lo = 0
			}
			if len(rs) > hi {
				tr.double++
			}
			rig.checkVerdictRuns(tr, ref, rs)
		}
		if len(rs) < lo || (hi >= 0 && len(rs) > hi) {
			tr.problem("%s %s ran %d times on the tool server (verdicts %v), want %d..%d: at most 1 + the rerun verdicts for it",
				cr.name, ref, len(rs), tr.verdicts[ref], lo, hi)
		}
		if cr.result == nil {
			tr.problem("%s %s has no result in the conversation", cr.name, ref)
			continue
		}
		if hasVerdict && v == reducer.Abandon {
			want, _ := json.Marshal(turn.AbandonedText)
			if !cr.result.IsError || !bytes.Equal(cr.result.Output, want) {
				tr.problem("abandoned %s %s: result %s (error %v), want the abandoned text", cr.name, ref, cr.result.Output, cr.result.IsError)
			}
			continue
		}
		if len(rs) == 0 {
			continue
		}
		if last := rs[len(rs)-1]; cr.result.IsError || !jsonEqual(cr.result.Output, last.Answer) {
			tr.problem("%s %s: result %s (error %v), want the answer to its last run %s", cr.name, ref, cr.result.Output, cr.result.IsError, last.Answer)
		}
	}
}

// checkVerdictRuns counts the runs of ref that followed each verdict on it,
// up to the next verdict: at most one after a rerun, none after an abandon.
func (rig *crashRig) checkVerdictRuns(tr *crashTrial, ref string, rs []toolCall) {
	vs := tr.verdicts[ref]
	for i, g := range vs {
		n := 0
		for _, r := range rs {
			if r.At.After(g.at) && (i+1 == len(vs) || r.At.Before(vs[i+1].at)) {
				n++
			}
		}
		tr.perVerdict = append(tr.perVerdict, verdictRuns{v: g.v, runs: n})
		if want := map[reducer.Verdict]int{reducer.Rerun: 1}[g.v]; n > want {
			tr.problem("%s: verdict %d (%s) was followed by %d runs, want at most %d", ref, i+1, g.v, n, want)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// report logs a trial and fails the test with its problems.
func (rig *crashRig) report(tr *crashTrial) {
	t := rig.t
	name := fmt.Sprintf("trial %d", tr.n)
	if tr.n == 0 {
		name = "control"
	}
	how := "not killed"
	switch {
	case tr.killed.IsZero():
		if tr.phase != "" {
			how = tr.phase
		}
	case tr.target != "":
		how = fmt.Sprintf("killed %v into the %s call (%s)", tr.delay.Round(time.Microsecond), tr.target, tr.phase)
	default:
		how = fmt.Sprintf("killed %v after the message (%s)", tr.delay.Round(time.Millisecond), tr.phase)
	}
	end := "did not end"
	switch {
	case tr.ended == nil:
	case tr.n == 0:
		end = fmt.Sprintf("%s %v after the message", tr.ended.Type, tr.recover.Round(time.Millisecond))
	case tr.killed.IsZero() || strings.HasSuffix(tr.phase, "after the end"):
		end = string(tr.ended.Type) + " before the kill"
	default:
		end = fmt.Sprintf("%s %v after the kill", tr.ended.Type, tr.recover.Round(time.Millisecond))
	}
	t.Logf("%s (%s): latency %v, %s; %s; verdicts %v; %d partial step(s), external ran %d time(s), idempotent repeats %d; took %v (spawn %v, checks %v)",
		name, tr.session, tr.latency, how, end, tr.verdicts, tr.partial, tr.externalRuns, tr.idemRepeats,
		tr.took.Round(time.Millisecond), tr.spawn.Round(time.Millisecond), tr.check.Round(time.Millisecond))
	for _, p := range tr.problems {
		t.Errorf("%s: %s", name, p)
	}
}

// summarize logs the figures of the killed trials and checks that both
// verdicts were exercised, and a rerun killed.
func (rig *crashRig) summarize(results []*crashTrial) {
	t := rig.t
	var completed, lost, dup, double, late, reruns, abandons, partial, idem, kills, twice int
	var maxPerRerun, rerunRuns, abandonRuns, maxRuns int
	var recover, total []time.Duration
	phases := map[string]int{}
	for _, tr := range results {
		if tr.ended != nil && tr.ended.Type == reducer.TurnCompleted {
			completed++
			total = append(total, tr.total)
		}
		lost += tr.lost
		dup += tr.duplicated
		double += tr.double
		partial += tr.partial
		idem += tr.idemRepeats
		kills += tr.kills
		maxRuns = max(maxRuns, tr.externalRuns)
		if tr.kills > 1 {
			twice++
		}
		phases[tr.phase]++
		for _, vr := range tr.perVerdict {
			if vr.v == reducer.Rerun {
				reruns++
				rerunRuns += vr.runs
				maxPerRerun = max(maxPerRerun, vr.runs)
			} else {
				abandons++
				abandonRuns += vr.runs
			}
		}
		switch {
		case tr.killed.IsZero() || strings.HasSuffix(tr.phase, "after the end"):
			late++
		case tr.ended != nil:
			recover = append(recover, tr.recover)
		}
	}
	var ph []string
	for _, k := range slices.Sorted(maps.Keys(phases)) {
		ph = append(ph, fmt.Sprintf("%s: %d", k, phases[k]))
	}
	t.Logf("crash trials: %d (%d kills, %d trials killed twice), completed %d, lost steps %d, duplicated steps %d, double effects %d",
		len(results), kills, twice, completed, lost, dup, double)
	t.Logf("runs per verdict of the non-idempotent call: max %d, total %d over %d rerun verdicts; %d runs after %d abandon verdicts; most runs of one call %d",
		maxPerRerun, rerunRuns, reruns, abandonRuns, abandons, maxRuns)
	p50, worst := quantiles(recover)
	t.Logf("last kill to completion over %d kills within a turn: p50 %v, max %v", len(recover), p50.Round(time.Millisecond), worst.Round(time.Millisecond))
	p50, worst = quantiles(total)
	t.Logf("message to completion over %d completed trials: p50 %v, max %v", len(total), p50.Round(time.Millisecond), worst.Round(time.Millisecond))
	t.Logf("uncertain executions: %d (rerun %d, abandon %d); idempotent writes repeated %d; partial steps dropped %d; kills after the end (or none) %d",
		reruns+abandons, reruns, abandons, idem, partial, late)
	t.Logf("kills landed: %s", strings.Join(ph, "; "))
	if len(results) >= 6 && (reruns == 0 || abandons == 0) {
		t.Errorf("both verdicts must be exercised: %d rerun, %d abandon", reruns, abandons)
	}
}

// quantiles returns the median and the maximum of ds.
func quantiles(ds []time.Duration) (p50, worst time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	ds = slices.Sorted(slices.Values(ds))
	return ds[len(ds)/2], ds[len(ds)-1]
}

// trialsAndSeed reads a kill-trial test's number of trials (envTrials, def
// when unset) and the seed of its random choices (envSeed, the clock when
// unset), failing the test on a value that is no number.
func trialsAndSeed(t *testing.T, envTrials string, def int, envSeed string) (int, uint64) {
	t.Helper()
	trials := def
	if v := os.Getenv(envTrials); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", envTrials, v)
		}
		trials = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(envSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned number", envSeed, v)
		}
		seed = n
	}
	return trials, seed
}
