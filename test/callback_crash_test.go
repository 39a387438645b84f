package test

// Callback kill trials: a turn calls an agent-file HTTP tool that completes
// by callback (effect external, callback timeout 1m). An outside server in
// this process records every envelope and token it receives, answers 202,
// and after a short random delay completes the token through the public
// callback route (POST /callbacks/{token}, through API Gateway, with no
// JWT), then posts the same token again. The resume bootstrap is SIGKILLed
// at one of three points, spread over the trials:
//
//  1. at the token's hand-out: when the outside server has the envelope,
//     before it answers 202 or right after (the turn has recorded
//     callback.opened but not yet its suspension);
//  2. around the completion: just before or just after the completion
//     POST (the turn suspended, or not yet durably so);
//  3. around the resume: when the completion's wake has resumed the turn
//     (turn.resumed after callback.ended), or at a short random delay
//     after the completion.
//
// Every trial must complete with dense facts; each callback opened at most
// once per attempt and ended at most once, the one the result depends on
// exactly once; exactly one result for the call in the rebuilt
// conversation, the outside server's completion (or, after an abandon
// verdict, the abandoned text); every completion answered 200 recorded as
// exactly one callback.ended by the token's holder, and every second POST
// of a token refused 409/410, writing nothing.
//
//	go test ./test/ -run TestCallbackKillTrials -v                # 12 trials
//	BATON_CALLBACK_TRIALS=60 go test ./test/ -run TestCallbackKillTrials -v -timeout 30m
//	BATON_CALLBACK_SEED=<seed> ...                                # replay the choices

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/tool/remote"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// Environment variables of the callback kill trials.
const (
	envCallbackTrials     = "BATON_CALLBACK_TRIALS"
	envCallbackSeed       = "BATON_CALLBACK_SEED"
	defaultCallbackTrials = 12
)

// The callback agent's tool, its one call's ref, and the trials' message.
const (
	cbTool   = "start_build"
	cbRef    = "build-1"
	cbPrompt = "Build main and tell me whether it passed."
)

// cbPoint is where a trial kills the resume process.
type cbPoint int

const (
	cbNone       cbPoint = iota // the control
	cbHandOut                   // the outside server has the envelope
	cbCompletion                // around the completion POST
	cbResume                    // after the completion's wake resumed the turn
)

func (p cbPoint) String() string {
	return [...]string{"none", "hand-out", "completion", "resume"}[p]
}

// The stages of the outside server's handling of one token, at which a
// trial may kill.
const (
	cbStageReceived = "envelope received, before the 202"
	cbStageAnswered = "right after the 202"
	cbStagePosting  = "just before the completion POST"
	cbStagePosted   = "just after the completion POST"
)

// --- the outside server ---

// cbEnvelope is an envelope the outside server received.
type cbEnvelope struct {
	CallID, Ref string
	Token, Hash string
	Deadline    time.Time
	At          time.Time
	// Answered: the 202 was written (the caller may have been dead).
	Answered bool
}

// cbPost is a completion POST the outside server made.
type cbPost struct {
	Hash   string
	Again  bool // a second POST of a token already posted
	Output json.RawMessage
	Code   int
	Body   string
	At     time.Time
}

// cbOutside is the outside system: it records every envelope, answers
// 202, and completes each token after the trial's delay through the
// stack's public callback route, then posts it a second time. Trials run
// one at a time; begin starts a trial's record.
type cbOutside struct {
	srv *httptest.Server
	s   *stack // set once the stack is up

	mu     sync.Mutex
	hook   func(stage string, e cbEnvelope) // the trial's kills
	delay  time.Duration                    // from the 202 to the completion; < 0: before the 202
	envs   []cbEnvelope
	posts  []cbPost
	builds int
	open   sync.WaitGroup // completions under way
}

func newCBOutside(t *testing.T) *cbOutside {
	o := &cbOutside{}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *cbOutside) serve(w http.ResponseWriter, r *http.Request) {
	var env remote.Envelope
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil || env.Callback == nil || env.Callback.Token == "" {
		http.Error(w, "want an envelope with a callback", http.StatusBadRequest)
		return
	}
	e := cbEnvelope{CallID: env.ToolCallID, Ref: refOfInput(env.Input), Token: env.Callback.Token,
		Hash: callback.Hash(env.Callback.Token), Deadline: env.Callback.Deadline, At: time.Now()}
	o.mu.Lock()
	o.envs = append(o.envs, e)
	i, hook, delay := len(o.envs)-1, o.hook, o.delay
	o.open.Add(1)
	o.mu.Unlock()
	if hook != nil {
		hook(cbStageReceived, e)
	}
	if delay < 0 {
		// A fast outside system: the completion before the 202, while
		// the tool still waits for its answer.
		o.complete(e, hook, 0)
	} else {
		defer func() { go o.complete(e, hook, delay) }()
	}
	w.WriteHeader(http.StatusAccepted)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	o.mu.Lock()
	o.envs[i].Answered = true
	o.mu.Unlock()
	if hook != nil {
		hook(cbStageAnswered, e)
	}
}

// complete posts e's completion after delay, then the same token again.
func (o *cbOutside) complete(e cbEnvelope, hook func(string, cbEnvelope), delay time.Duration) {
	defer o.open.Done()
	time.Sleep(delay)
	if hook != nil {
		hook(cbStagePosting, e)
	}
	o.mu.Lock()
	o.builds++
	out, _ := json.Marshal(map[string]any{"build": o.builds, "status": "passed", "token": e.Hash[:12]})
	o.mu.Unlock()
	o.post(e, out, false)
	if hook != nil {
		hook(cbStagePosted, e)
	}
	o.post(e, json.RawMessage(`{"build":-1,"status":"again"}`), true)
}

// post completes e's token with output through the callback route and
// records the answer.
func (o *cbOutside) post(e cbEnvelope, output json.RawMessage, again bool) cbPost {
	body, _ := json.Marshal(map[string]json.RawMessage{"output": output})
	p := cbPost{Hash: e.Hash, Again: again, Output: output, At: time.Now()}
	p.Code, p.Body = o.s.postCallback(e.Token, body)
	o.mu.Lock()
	o.posts = append(o.posts, p)
	o.mu.Unlock()
	return p
}

// begin clears the record for a new trial, whose kills hook runs at each
// stage of each token, and whose completions come delay after the 202.
func (o *cbOutside) begin(delay time.Duration, hook func(string, cbEnvelope)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.envs, o.posts, o.delay, o.hook = nil, nil, delay, hook
}

// wait waits for the trial's completions to be posted, up to timeout.
func (o *cbOutside) wait(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { o.open.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

func (o *cbOutside) snapshot() ([]cbEnvelope, []cbPost) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.envs), slices.Clone(o.posts)
}

// postCallback posts body to the public callback route of token through
// API Gateway, with no JWT, and returns the status (0 when the request
// failed) and the body. It runs on any goroutine.
func (s *stack) postCallback(token string, body []byte) (int, string) {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	req, err := s.api.NewRequest(ctx, "POST", "/callbacks/"+token, bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(b))
}

// --- the agent ---

// writeCallbackCrashAgents writes an agent file whose agent "ci" calls
// start_build (an HTTP tool on o, effect external, completing by callback)
// once, then answers, and returns its path.
func writeCallbackCrashAgents(t *testing.T, o *cbOutside) string {
	t.Helper()
	dir := t.TempDir()
	sc := fmt.Sprintf(`{"steps":[
	 {"delay":"20ms","text":"Starting the build.","toolCalls":[{"name":%q,"input":{"ref":%q}}]},
	 {"delay":"20ms","text":"The build is done."}]}`, cbTool, cbRef)
	if err := os.WriteFile(filepath.Join(dir, "ci.script.json"), []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	f := agents.File{Agents: map[string]agents.Config{
		"ci": {
			Provider: "scripted",
			Script:   json.RawMessage(`"ci.script.json"`),
			System:   "You start builds; their results come later.",
			Tools: []agents.ToolRef{{Name: cbTool, Decl: &agents.Decl{
				Name: cbTool, Kind: "http", Description: "Start a CI build; its result comes when it ends. Not idempotent.",
				Schema: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`),
				Effect: "external", URL: o.srv.URL, Timeout: "5s",
				Callback: &agents.CallbackDecl{Timeout: "1m"},
			}}},
			// As the crash agent's: the reaper may take a dead invocation's
			// turn about 1.1 s after it began.
			Limits: agents.Limits{Budget: "1s", Margin: "200ms", LeaseGrace: "100ms",
				MaxStepsPerInvocation: 20, MaxStepsPerTurn: 50, LiveFlush: "30ms"},
		},
	}}
	return writeAgentsFile(t, dir, f)
}

// --- the trials ---

// cbTrial is what one callback trial did and found.
type cbTrial struct {
	n       int
	session string
	point   cbPoint
	// first: kill before the 202 (hand-out), before the POST
	// (completion), at turn.resumed (resume); else after the 202, after
	// the POST, killDelay after the completion.
	first     bool
	delay     time.Duration // the completion, after the 202; < 0: before it
	killDelay time.Duration // resume: after turn.resumed, or after the completion

	once    sync.Once
	mu      sync.Mutex
	killed  time.Time
	kills   int
	phase   string // where the kill landed, with its delay
	where   string // the same, without the delay: the summary's key
	killErr error

	ended          *reducer.Fact
	recover, total time.Duration
	verdicts       map[string][]verdictGiven

	tokens, opened, accepted, refused int
	// early: the completion was recorded before the turn's suspension
	// for its callback was (while the tool ran, or the run was dead).
	early    bool
	took     time.Duration
	problems []string
}

func (tr *cbTrial) problem(format string, args ...any) {
	tr.problems = append(tr.problems, fmt.Sprintf(format, args...))
}

func (tr *cbTrial) variant() string {
	switch {
	case tr.point == cbNone:
		return "control"
	case tr.point == cbHandOut && tr.first:
		return "hand-out, before the 202"
	case tr.point == cbHandOut:
		return "hand-out, after the 202"
	case tr.point == cbCompletion && tr.first:
		return "completion, before the POST"
	case tr.point == cbCompletion:
		return "completion, after the POST"
	case tr.first:
		return "resume, at turn.resumed"
	}
	return "resume, after the completion"
}

// when says when the trial's completion came.
func (tr *cbTrial) when() string {
	if tr.delay < 0 {
		return "before the 202"
	}
	return tr.delay.Round(time.Millisecond).String() + " after the 202"
}

// cbRig is the stack and outside server the trials share.
type cbRig struct {
	t     *testing.T
	s     *stack
	o     *cbOutside
	rng   *rand.Rand
	cr    *crashRig // its drive: ticks and verdicts
	spawn int
}

// TestCallbackKillTrials kills the resume process around a callback's
// hand-out, its completion and the resume it wakes, and checks that no
// completion is lost or counted twice, no token handed out twice for an
// attempt, and the model sees exactly the outside server's result.
// BATON_CALLBACK_TRIALS sets the number of trials (default 12),
// BATON_CALLBACK_SEED the seed of the random choices (printed by every
// run).
func TestCallbackKillTrials(t *testing.T) {
	t.Parallel()
	trials, seed := trialsAndSeed(t, envCallbackTrials, defaultCallbackTrials, envCallbackSeed)
	t.Logf("%d callback kill trials, seed %d (replay the choices with %s=%d)", trials, seed, envCallbackSeed, seed)
	o := newCBOutside(t)
	s := newStack(t, stackConfig{
		agents:  writeCallbackCrashAgents(t, o),
		timeout: 2*time.Minute + time.Duration(trials)*15*time.Second,
	})
	o.s = s
	rig := &cbRig{t: t, s: s, o: o, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), cr: &crashRig{t: t, s: s}}

	control := rig.trial(0)
	rig.report(control)
	if len(control.problems) > 0 {
		t.Fatal("the control turn, not killed, fails the checks")
	}
	var results []*cbTrial
	for i := 1; i <= trials; i++ {
		tr := rig.trial(i)
		rig.report(tr)
		results = append(results, tr)
	}
	rig.summarize(results)
}

// trial runs trial n; n 0 is the control, not killed.
func (rig *cbRig) trial(n int) *cbTrial {
	s, rng := rig.s, rig.rng
	began := time.Now()
	tr := &cbTrial{n: n, verdicts: map[string][]verdictGiven{}}
	if n > 0 {
		tr.point = cbPoint(1 + (n-1)%3)
		tr.first = ((n-1)/3)%2 == 0
	}
	// A third of the completions come before the 202, while the tool
	// still runs; a third at once after it, racing the suspension; a
	// third later, to a suspended turn (for a kill at the hand-out,
	// some after the reaper took the dead run's turn).
	switch rng.IntN(3) {
	case 0:
		tr.delay = -1
	case 1:
		tr.delay = time.Duration(rng.Int64N(int64(10 * time.Millisecond)))
	case 2:
		tr.delay = 50*time.Millisecond + time.Duration(rng.Int64N(int64(450*time.Millisecond)))
	}
	if tr.point == cbHandOut && tr.delay > 0 && rng.IntN(2) == 0 {
		// After the reaper took the dead run's turn (about 1.1 s after
		// it began) and the turn resumed to wait for its callback.
		tr.delay = 1200*time.Millisecond + time.Duration(rng.Int64N(int64(800*time.Millisecond)))
	}
	if tr.point == cbResume {
		if tr.first {
			tr.killDelay = time.Duration(rng.Int64N(int64(20 * time.Millisecond)))
		} else {
			tr.killDelay = time.Duration(rng.Int64N(int64(100 * time.Millisecond)))
		}
	}

	id := s.createSession(alice, "ci")
	tr.session = id
	done := make(chan struct{})
	var killers sync.WaitGroup
	hook := func(stage string, e cbEnvelope) {
		switch {
		case tr.point == cbHandOut && tr.first && stage == cbStageReceived,
			tr.point == cbHandOut && !tr.first && stage == cbStageAnswered,
			tr.point == cbCompletion && tr.first && stage == cbStagePosting,
			tr.point == cbCompletion && !tr.first && stage == cbStagePosted:
			tr.once.Do(func() { rig.kill(tr, id, stage, "") })
		case tr.point == cbResume && stage == cbStagePosted:
			tr.once.Do(func() { killers.Go(func() { rig.killAtResume(tr, id, done) }) })
		}
	}
	if n == 0 {
		hook = nil
	}
	rig.o.begin(tr.delay, hook)
	posted := time.Now()
	s.post(alice, id, cbPrompt)

	// The kills come from the outside server's goroutines; the test's
	// drives the turn: ticks, and verdicts on uncertain executions.
	ctr := &crashTrial{n: n, verdicts: tr.verdicts}
	tr.ended = rig.cr.drive(ctr, id)
	tr.problems = append(tr.problems, ctr.problems...)
	close(done)
	if !rig.o.wait(30 * time.Second) {
		tr.problem("the outside server's completions did not finish within 30 s")
	}
	killers.Wait()
	tr.mu.Lock()
	killErr := tr.killErr
	tr.mu.Unlock()
	if killErr != nil {
		rig.t.Fatalf("trial %d: kill: %v", n, killErr)
	}
	if tr.point != cbNone && tr.kills == 0 && tr.phase == "" {
		tr.phase = "not killed: the turn ended first"
	}
	if tr.ended != nil {
		tr.total = tr.ended.Time.Sub(posted)
		if !tr.killed.IsZero() && tr.ended.Time.After(tr.killed) {
			tr.recover = tr.ended.Time.Sub(tr.killed)
		}
		rig.check(tr, id)
	}
	tr.took = time.Since(began)
	return tr
}

// killAtResume kills, for a resume trial, once the completion's wake
// resumed the turn (a turn.resumed after callback.ended) and killDelay
// more, or killDelay after the completion, unless the turn ends first.
func (rig *cbRig) killAtResume(tr *cbTrial, id string, done <-chan struct{}) {
	s := rig.s
	if !tr.first {
		select {
		case <-time.After(tr.killDelay):
		case <-done:
			tr.phase = "not killed: the turn ended first"
			return
		}
		rig.kill(tr, id, "after the completion", tr.killDelay.Round(time.Millisecond).String())
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			tr.phase = "not killed: the turn ended first"
			return
		default:
		}
		facts, err := s.store.Facts(s.ctx, id, 0)
		if err != nil {
			tr.mu.Lock()
			tr.killErr = err
			tr.mu.Unlock()
			return
		}
		ended := false
		for _, f := range facts {
			if f.Type == reducer.CallbackEnded {
				ended = true
			}
			if ended && f.Type == reducer.TurnResumed {
				time.Sleep(tr.killDelay)
				rig.kill(tr, id, "after turn.resumed", tr.killDelay.Round(time.Millisecond).String())
				return
			}
		}
		if len(facts) > 0 && facts[len(facts)-1].Ends() {
			tr.phase = "not killed: the turn ended first"
			return
		}
		time.Sleep(3 * time.Millisecond)
	}
	tr.phase = "not killed: no resume after the completion within 30 s"
}

// kill SIGKILLs the resume process, starts a fresh one as Lambda would for
// the next delivery, and records where the kill landed. It runs on the
// outside server's goroutines: errors go to tr.killErr.
func (rig *cbRig) kill(tr *cbTrial, id, stage, delay string) {
	s := rig.s
	fail := func(err error) {
		tr.mu.Lock()
		tr.killErr = err
		tr.mu.Unlock()
	}
	if err := s.resume.Load().Kill(); err != nil {
		fail(err)
		return
	}
	killed := time.Now()
	facts, err := s.store.Facts(s.ctx, id, 0)
	if err != nil {
		fail(err)
		return
	}
	rig.spawn++
	f, err := s.tryStart("resume", fmt.Sprintf("resume-cb%d", rig.spawn), resumeTimeout)
	if err != nil {
		fail(err)
		return
	}
	s.resume.Store(f)
	state := "no facts"
	if st, err := reducer.Reduce(facts); err != nil {
		state = "facts that do not reduce: " + err.Error()
	} else if len(facts) > 0 {
		last := facts[len(facts)-1]
		switch {
		case last.Ends():
			state = "after the end"
		case st.Status == reducer.Suspended:
			state = "suspended for " + string(st.Turn.Cause) + ", last " + string(last.Type)
		default:
			state = string(st.Status) + ", last " + string(last.Type)
		}
	}
	tr.mu.Lock()
	tr.killed, tr.where = killed, stage+" ("+state+")"
	tr.phase = strings.TrimPrefix(delay+" "+tr.where, " ")
	tr.kills++
	tr.mu.Unlock()
}

// check asserts what a trial must leave behind: the facts, the callbacks
// against what the outside server saw and posted, the rebuilt
// conversation and the stream.
func (rig *cbRig) check(tr *cbTrial, id string) {
	s := rig.s
	facts, err := s.store.Facts(s.ctx, id, 0)
	if err != nil {
		rig.t.Fatalf("read facts of %s: %v", id, err)
	}
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
	for _, p := range unresumed(facts) {
		tr.problem("%s", p)
	}

	// The callbacks, by hash: opened once, at most one per attempt of a
	// call, ended at most once.
	opened := map[string]reducer.Fact{}
	perAttempt := map[string]int{} // "call/attempt" -> callbacks opened
	ends := map[string][]reducer.Fact{}
	for _, f := range facts {
		switch f.Type {
		case reducer.CallbackOpened:
			if _, dup := opened[f.Callback.Hash]; dup {
				tr.problem("callback %.12s opened twice", f.Callback.Hash)
			}
			opened[f.Callback.Hash] = f
			perAttempt[fmt.Sprintf("%s/%d", f.Callback.ToolCallID, f.Callback.Attempt)]++
		case reducer.CallbackEnded:
			ends[f.Callback.Hash] = append(ends[f.Callback.Hash], f)
		}
	}
	tr.opened = len(opened)
	for k, n := range perAttempt {
		if n > 1 {
			tr.problem("%d callbacks opened for attempt %s", n, k)
		}
	}
	for h, es := range ends {
		if _, ok := opened[h]; !ok {
			tr.problem("callback.ended for %.12s, which no callback.opened names", h)
		}
		if len(es) > 1 {
			tr.problem("callback %.12s ended %d times", h, len(es))
		}
	}

	// What the outside server received: every token recorded (by its
	// hash) before it was handed out, at most one token per attempt.
	envs, posts := rig.o.snapshot()
	tr.tokens = len(envs)
	tokens := map[string]map[string]bool{} // "call/attempt" -> tokens
	for _, e := range envs {
		f, ok := opened[e.Hash]
		if !ok {
			tr.problem("the outside server got token %.12s, which no callback.opened records", e.Hash)
			continue
		}
		if f.Time.After(e.At) {
			tr.problem("token %.12s was recorded at %s, after the outside server got it at %s", e.Hash, f.Time.Format(time.StampMicro), e.At.Format(time.StampMicro))
		}
		if f.Callback.ToolCallID != e.CallID {
			tr.problem("token %.12s came for call %s, recorded for %s", e.Hash, e.CallID, f.Callback.ToolCallID)
		}
		if e.Deadline.IsZero() || e.Deadline.Sub(f.Time) > time.Minute+time.Second {
			tr.problem("token %.12s: deadline %s, want a minute after its opening at %s", e.Hash, e.Deadline, f.Time)
		}
		k := fmt.Sprintf("%s/%d", e.CallID, f.Callback.Attempt)
		if tokens[k] == nil {
			tokens[k] = map[string]bool{}
		}
		tokens[k][e.Token] = true
	}
	for k, ts := range tokens {
		if len(ts) > 1 {
			tr.problem("the outside server got %d tokens for attempt %s, want at most 1", len(ts), k)
		}
	}
	got := map[string]bool{}
	for _, e := range envs {
		got[e.Hash] = true
	}
	for h := range opened {
		if !got[h] {
			tr.problem("callback %.12s was opened, but its token never reached the outside server", h)
		}
	}

	// The completions: each first POST accepted (none lost), each second
	// refused; every 200 is exactly one callback.ended by the token's
	// holder, and each such end is a 200.
	suspendedFor := false
	for _, f := range facts {
		if f.Type == reducer.TurnSuspended && f.Cause == reducer.CauseCallback {
			suspendedFor = true
		}
		if f.Type == reducer.CallbackEnded && f.Actor.Kind == reducer.ActorCallback && !suspendedFor {
			tr.early = true
		}
	}
	byHolder := map[string]int{}
	for h, es := range ends {
		for _, f := range es {
			if f.Actor.Kind == reducer.ActorCallback {
				byHolder[h]++
			}
		}
	}
	accepted := map[string]cbPost{}
	for _, p := range posts {
		switch {
		case p.Code == http.StatusOK && p.Again:
			tr.problem("the second completion of token %.12s was accepted: %s", p.Hash, p.Body)
		case p.Code == http.StatusOK:
			accepted[p.Hash] = p
			tr.accepted++
			if byHolder[p.Hash] != 1 {
				tr.problem("completion of %.12s answered 200, but %d callback.ended by its holder", p.Hash, byHolder[p.Hash])
			}
		case p.Again && (p.Code == http.StatusConflict || p.Code == http.StatusGone):
			tr.refused++
		case p.Again:
			tr.problem("the second completion of token %.12s: %d %s, want 409 or 410", p.Hash, p.Code, p.Body)
		default:
			tr.problem("the completion of token %.12s was refused: %d %s (a lost completion)", p.Hash, p.Code, p.Body)
		}
	}
	for h, n := range byHolder {
		if _, ok := accepted[h]; !ok && n > 0 {
			tr.problem("callback %.12s ended by its holder with no completion answered 200", h)
		}
	}
	// Once more, after the end: refused, and nothing written.
	for _, e := range envs {
		code, body := s.postCallback(e.Token, []byte(`{"output":{"build":-2}}`))
		if code != http.StatusConflict && code != http.StatusGone {
			tr.problem("token %.12s posted after the turn's end: %d %s, want 409 or 410", e.Hash, code, body)
		} else {
			tr.refused++
		}
	}
	if after, err := s.store.Facts(s.ctx, id, 0); err != nil || len(after) != len(facts) {
		tr.problem("the completions after the end wrote %d facts (%v)", len(after)-len(facts), err)
	}

	// The call's result: from the callback of its newest execution, which
	// must have ended exactly once; after an abandon verdict, the
	// abandoned text.
	newest := 0
	var callID string
	for _, f := range ofType(facts, reducer.ExecutionStarted) {
		if f.Execution.Tool == cbTool && f.Execution.Try() > newest {
			newest, callID = f.Execution.Try(), f.Execution.ToolCallID
		}
	}
	var want json.RawMessage
	wantError := false
	var source *reducer.Fact
	for _, f := range opened {
		if f.Callback.ToolCallID == callID && f.Callback.Attempt == newest {
			source = &f
		}
	}
	v, hasVerdict := (&crashTrial{verdicts: tr.verdicts}).lastVerdict(cbRef)
	switch {
	case newest == 0:
		tr.problem("no execution.started for %s: %s", cbTool, summary(facts))
	case source != nil:
		h := source.Callback.Hash
		if len(ends[h]) != 1 {
			tr.problem("the callback the result depends on (%.12s) ended %d times, want once", h, len(ends[h]))
		}
		p, ok := accepted[h]
		if !ok {
			tr.problem("the callback the result depends on (%.12s) has no accepted completion", h)
		}
		want = p.Output
	case hasVerdict && v == reducer.Abandon:
		want, _ = json.Marshal(turn.AbandonedText)
		wantError = true
	default:
		tr.problem("the newest execution (attempt %d) of %s opened no callback, and no abandon verdict: %s", newest, cbTool, summary(facts))
	}

	// The rebuilt conversation: the call once, exactly one result, the
	// outside server's completion.
	sess, err := s.store.Load(s.ctx, id)
	if err != nil {
		rig.t.Fatalf("load %s: %v", id, err)
	}
	var calls []string
	var results []conversation.Content
	for _, m := range sess.History {
		for _, c := range m.Content {
			switch {
			case c.Type == conversation.ToolCall && c.ToolName == cbTool:
				calls = append(calls, c.ToolCallID)
			case c.Type == conversation.ToolResult && slices.Contains(calls, c.ToolCallID):
				results = append(results, c)
			}
		}
	}
	switch {
	case len(calls) != 1:
		tr.problem("the conversation calls %s %d times, want once", cbTool, len(calls))
	case len(results) != 1:
		tr.problem("the conversation has %d results for the call, want 1", len(results))
	case want != nil && (results[0].IsError != wantError || !jsonEqual(results[0].Output, want)):
		tr.problem("the call's result is %s (error %v), want %s (error %v)", results[0].Output, results[0].IsError, want, wantError)
	}
	if len(sess.History) == 0 || sess.History[len(sess.History)-1].Role != conversation.Assistant {
		tr.problem("the conversation does not end with the model's answer")
	}

	// The stream: completed, each completed step once, one result for the
	// call.
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
	completed, _, _ := splitSteps(ps)
	if len(completed) != 2 {
		tr.problem("%d completed steps in the stream, want 2: %s", len(completed), outline(ps))
	}
	// A result brought by a callback comes after the step that called,
	// once the turn resumed: counted over the whole stream.
	streamCalls := map[string]bool{}
	for _, st := range completed {
		for _, p := range st {
			if p.Type == parts.ToolInputAvailable {
				streamCalls[p.ToolCallID] = true
			}
		}
	}
	outputs := 0
	for _, p := range ps {
		switch p.Type {
		case parts.ToolOutputAvailable, parts.ToolOutputError, parts.ToolOutputDenied:
			if !streamCalls[p.ToolCallID] {
				tr.problem("a result in the stream for %s, which no completed step calls", p.ToolCallID)
			}
			outputs++
		}
	}
	if len(streamCalls) != 1 || outputs != 1 {
		tr.problem("the stream's completed steps make %d calls with %d results, want 1 and 1: %s", len(streamCalls), outputs, outline(ps))
	}
}

// report logs a trial and fails the test with its problems.
func (rig *cbRig) report(tr *cbTrial) {
	name := fmt.Sprintf("trial %d", tr.n)
	if tr.n == 0 {
		name = "control"
	}
	how := "not killed"
	if tr.phase != "" {
		how = "killed " + tr.phase
	}
	end := "did not end"
	switch {
	case tr.ended == nil:
	case tr.recover > 0:
		end = fmt.Sprintf("%s %v after the kill", tr.ended.Type, tr.recover.Round(time.Millisecond))
	default:
		end = fmt.Sprintf("%s %v after the message", tr.ended.Type, tr.total.Round(time.Millisecond))
	}
	early := ""
	if tr.early {
		early = ", recorded before the suspension"
	}
	rig.t.Logf("%s (%s): %s, completion %s%s; %s; %s; tokens %d, callbacks opened %d, completions accepted %d, refused %d; verdicts %v; took %v",
		name, tr.session, tr.variant(), tr.when(), early, how, end,
		tr.tokens, tr.opened, tr.accepted, tr.refused, tr.verdicts, tr.took.Round(time.Millisecond))
	for _, p := range tr.problems {
		rig.t.Errorf("%s: %s", name, p)
	}
}

// summarize logs the trials' figures.
func (rig *cbRig) summarize(results []*cbTrial) {
	t := rig.t
	var completed, kills, late, tokens, accepted, refused, verdicts, failed, early int
	perPoint := map[string]int{}
	phases := map[string]int{}
	var recover []time.Duration
	for _, tr := range results {
		if tr.ended != nil && tr.ended.Type == reducer.TurnCompleted {
			completed++
		}
		kills += tr.kills
		if strings.Contains(tr.where, "(after the end)") {
			late++
		}
		if tr.kills > 0 {
			perPoint[tr.point.String()] += tr.kills
		}
		where := tr.where
		if where == "" {
			where = tr.phase
		}
		phases[tr.variant()+": "+where]++
		tokens += tr.tokens
		if tr.early {
			early++
		}
		accepted += tr.accepted
		refused += tr.refused
		for _, vs := range tr.verdicts {
			verdicts += len(vs)
		}
		if len(tr.problems) > 0 {
			failed++
		}
		if tr.recover > 0 {
			recover = append(recover, tr.recover)
		}
	}
	var pp []string
	for _, p := range []cbPoint{cbHandOut, cbCompletion, cbResume} {
		pp = append(pp, fmt.Sprintf("%s %d", p, perPoint[p.String()]))
	}
	p50, worst := quantiles(recover)
	t.Logf("callback kill trials: %d, completed %d, failed %d; kills %d (%s; %d after the turn's end); tokens handed out %d; completions accepted %d (%d before the suspension), refused %d; verdicts %d; kill to completion over %d: p50 %v, worst %v",
		len(results), completed, failed, kills, strings.Join(pp, ", "), late, tokens, accepted, early, refused, verdicts,
		len(recover), p50.Round(time.Millisecond), worst.Round(time.Millisecond))
	for _, k := range slices.Sorted(maps.Keys(phases)) {
		t.Logf("  %s: %d", k, phases[k])
	}
}
