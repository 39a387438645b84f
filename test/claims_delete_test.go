package test

// Claim delete trials (issue 24, item 1): session A's write-claimed call
// is running at the tool's server when A loses its invocation — cancelled,
// or its resume process SIGKILLed and then cancelled — and A is then
// removed mid-effect: deleted through the API, swept by the retention
// sweep (run with a short retention), or deleted with its parent (A is
// then a child session, cancelled by its parent's cancel). Session B,
// blocked on the same key, must not start its effect while A's runs, nor
// at all until A's owner releases the orphaned grant (GET and POST
// /claims/orphans), and must then finish once. The tool server records
// every call's effect interval, so an overlap on the key is seen whatever
// the callers did. The trials also count what the deleted sessions left
// in the bucket and the table.
//
//	go test ./test/ -run ClaimDelete -v                                  # 4 trials
//	BATON_CLAIM_TRIALS=100 go test ./test/ -run ClaimDelete -v -timeout 30m
//	BATON_CLAIM_SEED=<seed> ...                                          # replay the choices

import (
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/claims/claimsdb"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tool/remote"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/test/harness"
)

const (
	envClaimTrials     = "BATON_CLAIM_TRIALS"
	envClaimSeed       = "BATON_CLAIM_SEED"
	defaultClaimTrials = 4
	// claimPoll is the stack's claims poll: a blocked turn asks again this
	// often, so a grant freed too early is taken at once.
	claimPoll = 300 * time.Millisecond
	// claimKey is the order every trial's calls claim.
	claimKey = "o1"
)

// --- the tool server ---

// effect is one call's effect at the tool server: it runs from Start to
// End on Key whether or not its caller stays for the answer.
type claimEffect struct {
	Key, Session string
	Slow         bool
	Start, End   time.Time
}

// claimServer serves the refund tool: a slow call's effect lasts hold,
// any other's a few milliseconds.
type claimServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	hold    time.Duration
	effects []claimEffect
	slow    chan struct{} // closed as the trial's first slow call arrives
}

func newClaimServer(t *testing.T) *claimServer {
	es := &claimServer{}
	es.srv = httptest.NewServer(http.HandlerFunc(es.serve))
	t.Cleanup(es.srv.Close)
	return es
}

func (es *claimServer) serve(w http.ResponseWriter, r *http.Request) {
	var env remote.Envelope
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in struct {
		Order string `json:"order"`
		Slow  bool   `json:"slow"`
	}
	_ = json.Unmarshal(env.Input, &in)
	sess, _, _ := strings.Cut(env.IdempotencyKey, "/")
	es.mu.Lock()
	d := 10 * time.Millisecond
	if in.Slow {
		d = es.hold
	}
	now := time.Now()
	es.effects = append(es.effects, claimEffect{Key: in.Order, Session: sess, Slow: in.Slow, Start: now, End: now.Add(d)})
	if in.Slow && es.slow != nil {
		close(es.slow)
		es.slow = nil
	}
	es.mu.Unlock()
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		return // the effect runs on; its answer is lost
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"refunded":%q}`, in.Order)
}

// begin starts a trial's record: slow calls hold for hold; the channel is
// closed as the first arrives.
func (es *claimServer) begin(hold time.Duration) <-chan struct{} {
	es.mu.Lock()
	defer es.mu.Unlock()
	es.effects, es.hold, es.slow = nil, hold, make(chan struct{})
	return es.slow
}

func (es *claimServer) snapshot() []claimEffect {
	es.mu.Lock()
	defer es.mu.Unlock()
	return slices.Clone(es.effects)
}

// overlaps counts the pairs of effects on one key that ran at once.
func overlaps(es []claimEffect) int {
	n := 0
	for i, a := range es {
		for _, b := range es[i+1:] {
			if a.Key == b.Key && a.Start.Before(b.End) && b.Start.Before(a.End) {
				n++
			}
		}
	}
	return n
}

// --- the agents ---

// writeClaimAgents writes the trials' agents: "holder" refunds the order
// slowly, "waiter" quickly, both under a write claim on the order; "boss"
// asks one holder as its child. Budgets are short, so the holder's grant
// is past its deadline while its effect still runs.
func writeClaimAgents(t *testing.T, es *claimServer) string {
	t.Helper()
	dir := t.TempDir()
	scripts := map[string]string{
		"holder.script.json": `{"steps":[{"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"` + claimKey + `","slow":true}}]},{"text":"Refunded."}]}`,
		"waiter.script.json": `{"steps":[{"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"` + claimKey + `"}}]},{"text":"Refunded too."}]}`,
		"boss.script.json":   `{"steps":[{"text":"Asking.","toolCalls":[{"name":"holder","input":{"task":"refund"}}]},{"text":"Done."}]}`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	schema := json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"},"slow":{"type":"boolean"}},"required":["order"]}`)
	refund := agents.ToolRef{Name: "refund", Decl: &agents.Decl{Name: "refund", Kind: "http", Description: "Refund an order.",
		Schema: schema, Effect: "external", URL: es.srv.URL + "/refund", Timeout: "10s",
		Claims: []claims.Static{{Namespace: "orders", Field: "order", Access: claims.Write}}}}
	short := agents.Limits{Budget: "1s", Margin: "200ms", LeaseGrace: "100ms", LiveFlush: "30ms"}
	f := agents.File{Agents: map[string]agents.Config{
		"holder": {Provider: "scripted", Script: json.RawMessage(`"holder.script.json"`), System: "You refund slowly.",
			Tools: []agents.ToolRef{refund}, Limits: short},
		"waiter": {Provider: "scripted", Script: json.RawMessage(`"waiter.script.json"`), System: "You refund.",
			Tools: []agents.ToolRef{refund}, Limits: agents.Limits{Budget: "5s", Margin: "200ms", LeaseGrace: "100ms"}},
		"boss": {Provider: "scripted", Script: json.RawMessage(`"boss.script.json"`), System: "You ask.",
			Agents: []string{"holder"}, Limits: agents.Limits{Budget: "5s", Margin: "200ms", LeaseGrace: "100ms"}},
	}}
	return writeAgentsFile(t, dir, f)
}

// --- the trials ---

// claimTrial is what one trial did and found.
type claimTrial struct {
	n             int
	how, mid      string // how A was removed; how it lost its invocation
	holder, owner string // A, and the session deleted (A or its parent)
	waiter        string
	midEffect     bool // A was removed while its effect still ran
	completed     bool // B finished, once, after the release
	earlier       bool // B started its effect before the release
	effects       int  // B's effects
	overlaps      int
	leftObjects   int // S3 objects of the deleted sessions
	leftItems     int // DynamoDB items of the deleted sessions, tombstones aside
	problems      []string
}

func (tr *claimTrial) problem(format string, args ...any) {
	tr.problems = append(tr.problems, fmt.Sprintf(format, args...))
}

type claimRig struct {
	t       *testing.T
	s       *stack
	es      *claimServer
	sweeper *session.Store
	spawn   int
}

// TestClaimDeleteTrials: see the file's comment. BATON_CLAIM_TRIALS sets
// the number of trials (default 4), BATON_CLAIM_SEED the seed of the random
// choices.
func TestClaimDeleteTrials(t *testing.T) {
	t.Parallel()
	trials, seed := trialsAndSeed(t, envClaimTrials, defaultClaimTrials, envClaimSeed)
	t.Logf("%d claim delete trials, seed %d (replay with %s=%d)", trials, seed, envClaimSeed, seed)
	es := newClaimServer(t)
	s := newStack(t, stackConfig{agents: writeClaimAgents(t, es), claimsPoll: claimPoll,
		timeout: 2*time.Minute + time.Duration(trials)*20*time.Second})
	sweeper := session.New(dynamo.New(s.emu.Clients.DynamoDB, s.res.Table), streams.New(s.emu.Clients.S3, s.res.Bucket))
	sweeper.Claims = claimsdb.New(s.emu.Clients.DynamoDB, s.res.Table)
	rig := &claimRig{t: t, s: s, es: es, sweeper: sweeper}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var results []*claimTrial
	for i := 1; i <= trials; i++ {
		hows := []string{"delete", "retention", "parent delete"}
		mids := []string{"cancel", "cancel", "kill"}
		tr := rig.trial(i, rng, hows[(i-1)%len(hows)], mids[rng.IntN(len(mids))])
		results = append(results, tr)
		if len(tr.problems) > 0 {
			t.Errorf("trial %d (%s after %s, A %s): %s", i, tr.how, tr.mid, tr.holder, strings.Join(tr.problems, "; "))
		}
	}
	rig.summarize(results)
}

// trial runs one trial.
func (rig *claimRig) trial(n int, rng *rand.Rand, how, mid string) *claimTrial {
	s := rig.s
	tr := &claimTrial{n: n, how: how, mid: mid}
	hold := time.Duration(2500+rng.IntN(1500)) * time.Millisecond
	arrived := rig.es.begin(hold)
	agent := "holder"
	if how == "parent delete" {
		agent = "boss"
	}
	tr.owner = s.createSession(alice, agent)
	s.post(alice, tr.owner, "Refund order "+claimKey+".")
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		tr.problem("the holder's refund never reached the tool server")
		return tr
	}
	effectEnd := time.Now().Add(hold)
	tr.holder = tr.owner
	if how == "parent delete" {
		tr.holder = rig.firstSlowSession()
	}
	time.Sleep(time.Duration(rng.IntN(250)) * time.Millisecond)
	if mid == "kill" {
		rig.killResume()
	}
	// The cancel: a parent's cancels its child in the resume function.
	s.must(http.StatusAccepted, "POST", "/sessions/"+tr.owner+"/cancel", alice, `{"reason":"stop"}`, nil)
	tr.waiter = s.createSession(alice, "waiter")
	s.post(alice, tr.waiter, "Refund order "+claimKey+" too.")
	rig.tickUntil(20*time.Second, func() bool { return rig.blocked(tr.waiter) })
	if !rig.blocked(tr.waiter) {
		tr.problem("the waiter never blocked on the holder's grant: %s", summary(rig.factsOf(tr.waiter)))
		return tr
	}
	time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
	rig.remove(tr)
	tr.midEffect = time.Now().Before(effectEnd)
	// Until the operator acts, the waiter asks every poll and must find
	// the grant held, during the effect and after it.
	rig.tickUntil(time.Until(effectEnd)+6*claimPoll, func() bool { return false })
	release := time.Now()
	if b := rig.waiterEffects(tr.waiter); len(b) > 0 {
		tr.earlier = true
		tr.problem("the waiter's effect started %v before the release, %v after the holder's was removed", release.Sub(b[0].Start).Round(time.Millisecond), b[0].Start.Sub(effectEnd.Add(-hold)).Round(time.Millisecond))
	}
	rig.releaseOrphan(tr)
	rig.tickUntil(20*time.Second, func() bool { return rig.ended(tr.waiter) })
	rig.check(tr, release)
	return tr
}

// remove removes the holder: a delete through the API (of A, or of its
// parent), or the retention sweep with a retention of a millisecond.
func (rig *claimRig) remove(tr *claimTrial) {
	s := rig.s
	if tr.how == "retention" {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := rig.sweeper.Sweep(s.ctx, time.Millisecond, time.Hour); err != nil {
				tr.problem("sweep: %v", err)
				return
			}
			if _, err := s.store.Head(s.ctx, tr.holder); err != nil {
				return // swept
			}
			time.Sleep(50 * time.Millisecond) // its cancel is still landing
		}
		tr.problem("the sweep never removed the holder")
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := s.do("DELETE", "/sessions/"+tr.owner, alice, "", nil)
		switch r.code {
		case http.StatusNoContent:
			return
		case http.StatusConflict: // its (or its child's) cancel is still landing
			time.Sleep(50 * time.Millisecond)
			continue
		}
		tr.problem("delete: %s", r)
		return
	}
	tr.problem("the delete was refused for 20 s")
}

// releaseOrphan is the operator acting: alice lists her orphaned grants,
// finds the holder's and releases it; bob sees none of them.
func (rig *claimRig) releaseOrphan(tr *claimTrial) {
	s := rig.s
	var mine, his api.Orphans
	s.must(http.StatusOK, "GET", "/claims/orphans", alice, "", &mine)
	s.must(http.StatusOK, "GET", "/claims/orphans", bob, "", &his)
	if len(his.Orphans) != 0 {
		tr.problem("bob sees %d of alice's orphans", len(his.Orphans))
	}
	var found []claims.Grant
	for _, g := range mine.Orphans {
		if g.Session == tr.holder {
			found = append(found, g)
		}
	}
	if len(found) != 1 {
		tr.problem("alice's orphans %+v: want one of the holder %s", mine.Orphans, tr.holder)
		return
	}
	if r := s.do("POST", "/claims/orphans/"+found[0].ID+"/release", bob, "{}", nil); r.code != http.StatusNotFound {
		tr.problem("bob's release of alice's orphan: %s, want 404", r)
	}
	s.must(http.StatusAccepted, "POST", "/claims/orphans/"+found[0].ID+"/release", alice, "{}", nil)
}

// check asserts what the trial must leave behind.
func (rig *claimRig) check(tr *claimTrial, release time.Time) {
	all := rig.es.snapshot()
	tr.overlaps = overlaps(all)
	if tr.overlaps > 0 {
		tr.problem("%d overlapping effects on %s: %+v", tr.overlaps, claimKey, all)
	}
	b := rig.waiterEffects(tr.waiter)
	tr.effects = len(b)
	facts := rig.factsOf(tr.waiter)
	done := len(ofType(facts, reducer.TurnCompleted))
	switch {
	case done != 1 || len(b) != 1:
		tr.problem("the waiter completed %d turns with %d effects, want 1 and 1: %s", done, len(b), summary(facts))
	case b[0].Start.Before(release):
		tr.problem("the waiter's effect started before the release")
	default:
		tr.completed = true
	}
	if n := len(ofType(facts, reducer.TurnStarted)); n != 1 {
		tr.problem("the waiter started %d turns", n)
	}
	for _, id := range slices.Compact([]string{tr.owner, tr.holder}) {
		objs, items := rig.leftOf(id)
		tr.leftObjects += objs
		tr.leftItems += items
	}
}

// summarize logs the counts the issue asks for.
func (rig *claimRig) summarize(results []*claimTrial) {
	t := rig.t
	var completed, lost, doubled, overlapping, early, mid, objs, items, failed int
	hows := map[string]int{}
	for _, tr := range results {
		hows[tr.how+" after "+tr.mid]++
		switch {
		case tr.completed:
			completed++
		case tr.effects > 1:
			doubled++
		default:
			lost++
		}
		if tr.effects > 1 && tr.completed {
			doubled++
		}
		overlapping += tr.overlaps
		if tr.earlier {
			early++
		}
		if tr.midEffect {
			mid++
		}
		objs += tr.leftObjects
		items += tr.leftItems
		if len(tr.problems) > 0 {
			failed++
		}
	}
	t.Logf("%d trials (%d removed mid-effect), %d failed: completed %d, lost %d, doubled %d, overlapping effects %d, "+
		"started before the release %d; left of deleted sessions: %d S3 objects, %d DynamoDB items (tombstones aside)",
		len(results), mid, failed, completed, lost, doubled, overlapping, early, objs, items)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range hows {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Logf("  %s: %d", k, hows[k])
	}
}

// --- helpers ---

// tickUntil fires the tick every poll until ok or timeout, so the
// waiter's poll wakes and the holder's reaping are delivered.
func (rig *claimRig) tickUntil(timeout time.Duration, ok func() bool) {
	s := rig.s
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && !ok() {
		ev, err := harness.ScheduledEvent("arn:aws:events:"+harness.Region+":"+harness.Account+":rule/"+s.id+"-tick", harness.Region, time.Now())
		if err != nil {
			rig.t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		if _, err := s.tick.Invoke(ctx, ev); err != nil {
			rig.t.Logf("tick: %v", err)
		}
		cancel()
		time.Sleep(claimPoll)
	}
}

// killResume SIGKILLs the resume process and starts a fresh one.
func (rig *claimRig) killResume() {
	s := rig.s
	if err := s.resume.Load().Kill(); err != nil {
		rig.t.Fatalf("kill: %v", err)
	}
	rig.spawn++
	f, err := s.tryStart("resume", fmt.Sprintf("resume-d%d", rig.spawn), resumeTimeout)
	if err != nil {
		rig.t.Fatal(err)
	}
	s.resume.Store(f)
}

func (rig *claimRig) factsOf(id string) []reducer.Fact {
	facts, err := rig.s.store.Facts(rig.s.ctx, id, 0)
	if err != nil {
		return nil
	}
	return facts
}

// blocked reports whether session id's turn is suspended as blocked.
func (rig *claimRig) blocked(id string) bool {
	sess, err := rig.s.store.Load(rig.s.ctx, id)
	return err == nil && sess.State.Turn != nil && sess.State.Status == reducer.Suspended && sess.State.Turn.Cause == reducer.CauseBlocked
}

// ended reports whether session id has no open turn after one.
func (rig *claimRig) ended(id string) bool {
	sess, err := rig.s.store.Load(rig.s.ctx, id)
	return err == nil && sess.State.Turns > 0 && sess.State.Turn == nil
}

// firstSlowSession is the session of the trial's first slow effect.
func (rig *claimRig) firstSlowSession() string {
	for _, e := range rig.es.snapshot() {
		if e.Slow {
			return e.Session
		}
	}
	return ""
}

// waiterEffects are the effects of session id.
func (rig *claimRig) waiterEffects(id string) []claimEffect {
	var out []claimEffect
	for _, e := range rig.es.snapshot() {
		if e.Session == id {
			out = append(out, e)
		}
	}
	return out
}

// leftOf counts what deleted session id left: its objects under streams/
// and snapshots/, and its items in the table other than its tombstone.
func (rig *claimRig) leftOf(id string) (objects, items int) {
	s := rig.s
	for _, prefix := range []string{"streams/" + id + "/", "snapshots/" + id + "/"} {
		out, err := s.emu.Clients.S3.ListObjectsV2(s.ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.res.Bucket), Prefix: aws.String(prefix)})
		if err != nil {
			rig.t.Fatalf("list %s: %v", prefix, err)
		}
		objects += len(out.Contents)
	}
	out, err := s.emu.Clients.DynamoDB.Query(s.ctx, &dynamodb.QueryInput{TableName: aws.String(s.res.Table),
		KeyConditionExpression: aws.String("pk = :pk"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		rig.t.Fatalf("query %s: %v", id, err)
	}
	for _, it := range out.Items {
		if sk, ok := it["sk"].(*types.AttributeValueMemberN); ok && sk.Value == "-2" {
			continue
		}
		items++
	}
	return objects, items
}
