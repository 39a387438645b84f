package test

// Child kill trials: the resume bootstrap is SIGKILLed at random points of
// a parent turn that fans out two child sessions, each of which calls an
// idempotent write tool on the crash trials' tool server (which records
// every call) and answers. The tick reaps dead invocations and re-sends
// lost wakes, SQS delivery resumes parent and children in a fresh process.
// Every trial must end with the parent's turn completed once, each child
// created and started exactly once, each child's end delivered to the
// parent exactly once (one child.ended per child) and reported, the
// children's answers as the parent's call results (nothing lost), and each
// child's write run under one idempotency key only (no double effect: a
// child started twice would write under a second key).
//
// Some trials also delete the family at a random point (cancel the parent,
// then DELETE it through the API; one in five trials) or run the
// retention sweep at one (session.Store.Sweep with a retention of 1 ns,
// which deletes every idle session; one in five). A deleted family must
// leave nothing in the table or the bucket but its tombstones once the
// leases have passed and the tick ran, and get no tool call after its
// delete; a family that survives a sweep must complete as above, with its
// children's ends delivered once, deleted children or not.
//
//	go test ./test/ -run ChildKill -v                                  # 6 trials
//	BATON_CHILD_TRIALS=100 go test ./test/ -run ChildKill -v -timeout 30m
//	BATON_CHILD_SEED=<seed> ...                                        # replay the choices

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

const (
	envChildTrials     = "BATON_CHILD_TRIALS"
	envChildSeed       = "BATON_CHILD_SEED"
	defaultChildTrials = 6
	childFanOut        = 2
)

// writeChildAgents writes an agent file with the parent ("boss", which
// fans out childFanOut calls of "worker") and the child ("worker", which
// writes once and answers), and returns its path.
func writeChildAgents(t *testing.T, ts *toolServer) string {
	t.Helper()
	dir := t.TempDir()
	var calls []string
	for i := range childFanOut {
		calls = append(calls, fmt.Sprintf(`{"name":"worker","input":{"task":"job-%d"}}`, i))
	}
	boss := `{"steps":[{"delay":"40ms","text":"Fanning out.","toolCalls":[` + strings.Join(calls, ",") + `]},{"delay":"40ms","text":"All done."}]}`
	worker := `{"steps":[{"delay":"40ms","text":"Writing.","toolCalls":[{"name":"upsert","input":{"ref":"w"}}]},{"delay":"40ms","text":"Worker done."}]}`
	for name, body := range map[string]string{"boss.script.json": boss, "worker.script.json": worker} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lim := agents.Limits{Budget: "1s", Margin: "200ms", LeaseGrace: "100ms", MaxStepsPerInvocation: 20, MaxStepsPerTurn: 50, LiveFlush: "30ms"}
	schema := json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`)
	f := agents.File{Agents: map[string]agents.Config{
		"boss": {Provider: "scripted", Script: json.RawMessage(`"boss.script.json"`), System: "You fan out.",
			Agents: []string{"worker"}, Limits: lim},
		"worker": {Provider: "scripted", Script: json.RawMessage(`"worker.script.json"`), System: "You write once.",
			Tools: []agents.ToolRef{{Name: "upsert", Decl: &agents.Decl{Name: "upsert", Kind: "http", Description: "Write; safe to repeat with the same key.",
				Schema: schema, Effect: "write", Idempotent: true, URL: ts.url("upsert"), Timeout: "5s"}}},
			Limits: lim},
	}}
	return writeAgentsFile(t, dir, f)
}

// childTrial is what one child trial did and found.
type childTrial struct {
	n        int
	parent   string
	kids     []string
	kills    int
	phase    string
	problems []string
	took     time.Duration

	// action is what the trial did besides kills: "", "delete" or
	// "retention"; acted is when it returned.
	action string
	acted  time.Time
	// deleted: the parent was gone at the end; orphans are what of the
	// deleted family was left once the leases passed and the tick ran;
	// late counts the family's tool calls after the delete returned.
	deleted                 bool
	orphans, late, overlaps int
}

// childTally sums the trials' outcomes.
type childTally struct {
	deleted, byAPI, bySweep, survived                 int
	completed, lost, doubled, overlaps, orphans, late int
}

func (c *childTally) add(tr *childTrial) {
	switch {
	case tr.deleted:
		c.deleted++
		if tr.action == "delete" {
			c.byAPI++
		} else {
			c.bySweep++
		}
	case tr.action == "retention":
		c.survived++
	}
	lost, doubled := false, false
	for _, p := range tr.problems {
		lost = lost || strings.Contains(p, "did not settle") || strings.Contains(p, "delivered 0 times") ||
			strings.Contains(p, "child results") || strings.Contains(p, "0 parent turn.completed")
		doubled = doubled || strings.Contains(p, "idempotency keys") || strings.Contains(p, "times, want once") ||
			strings.Contains(p, "created 2") || strings.Contains(p, "started 2")
	}
	if len(tr.problems) == 0 {
		c.completed++
	}
	if lost {
		c.lost++
	}
	if doubled {
		c.doubled++
	}
	c.overlaps += tr.overlaps
	c.orphans += tr.orphans
	c.late += tr.late
}

// keyOverlaps counts the pairs of calls under one idempotency key that
// were at the tool server at the same time.
func keyOverlaps(calls []toolCall) int {
	n := 0
	end := func(c toolCall) time.Time {
		switch {
		case !c.Answered.IsZero():
			return c.Answered
		case !c.Gone.IsZero():
			return c.Gone
		}
		return time.Now()
	}
	for i, a := range calls {
		for _, b := range calls[i+1:] {
			if a.EnvKey == b.EnvKey && a.At.Before(end(b)) && b.At.Before(end(a)) {
				n++
			}
		}
	}
	return n
}

// trialAction is what trial n does besides kills: a delete for one in
// five, a retention sweep for another one in five.
func trialAction(n int) string {
	switch n % 5 {
	case 1:
		return "delete"
	case 3:
		return "retention"
	}
	return ""
}

func (tr *childTrial) problem(format string, args ...any) {
	tr.problems = append(tr.problems, fmt.Sprintf(format, args...))
}

// TestChildKillTrials kills the resume process at random points of parent
// and child turns and checks that each child starts once and its result
// reaches the parent once. BATON_CHILD_TRIALS sets the number of trials
// (default 6), BATON_CHILD_SEED the seed of the random choices.
func TestChildKillTrials(t *testing.T) {
	t.Parallel()
	trials, seed := trialsAndSeed(t, envChildTrials, defaultChildTrials, envChildSeed)
	t.Logf("%d child kill trials, seed %d (replay with %s=%d)", trials, seed, envChildSeed, seed)
	ts := newToolServer(t)
	s := newStack(t, stackConfig{agents: writeChildAgents(t, ts), timeout: 2*time.Minute + time.Duration(trials)*15*time.Second})
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rig := &crashRig{t: t, s: s, ts: ts}

	control := rig.childTrial(0, rng, 0)
	if len(control.problems) > 0 {
		t.Fatalf("the control trial, not killed: %v", control.problems)
	}
	span := control.took
	t.Logf("control: %v from message to the parent's completion", span.Round(time.Millisecond))
	kills, failed := 0, 0
	var tally childTally
	phases := map[string]int{}
	for i := 1; i <= trials; i++ {
		tr := rig.childTrial(i, rng, span)
		kills += tr.kills
		phases[tr.phase]++
		tally.add(tr)
		if len(tr.problems) > 0 {
			failed++
			t.Errorf("trial %d (parent %s, kill %s, action %q): %s", i, tr.parent, tr.phase, tr.action, strings.Join(tr.problems, "; "))
		}
	}
	t.Logf("%d trials, %d kills, %d failed; each child started once and delivered once in the others", trials, kills, failed)
	t.Logf("%d deleted (%d through the API, %d by the retention sweep), %d survived a sweep; completed %d, lost %d, doubled %d, overlaps %d, orphaned objects and items %d, tool calls after a delete %d",
		tally.deleted, tally.byAPI, tally.bySweep, tally.survived, tally.completed, tally.lost, tally.doubled, tally.overlaps, tally.orphans, tally.late)
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for k := range phases {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Logf("  killed %s: %d", p, phases[p])
	}
}

// childTrial runs one trial: a kill within span of the message (none for
// the control, span 0), or, for every third trial, as a child's write
// arrives at the tool server.
func (rig *crashRig) childTrial(n int, rng *rand.Rand, span time.Duration) *childTrial {
	s := rig.s
	tr := &childTrial{n: n}
	var arrived []<-chan struct{}
	if span > 0 && n%3 == 0 {
		arrived = rig.ts.begin(time.Duration(5+rng.IntN(20))*time.Millisecond, "w", 1)
	} else {
		rig.ts.begin(time.Duration(5+rng.IntN(20))*time.Millisecond, "", 0)
	}
	id := s.createSession(alice, "boss")
	tr.parent = id
	began := time.Now()
	s.post(alice, id, "Fan out.")
	done := make(chan struct{})
	var killer sync.WaitGroup
	if span > 0 {
		trigger := make(chan struct{})
		if arrived != nil {
			go func() {
				select {
				case <-arrived[0]:
					close(trigger)
				case <-done:
				}
			}()
		} else {
			timer := time.AfterFunc(time.Duration(rng.Int64N(int64(span))), func() { close(trigger) })
			defer timer.Stop()
		}
		killer.Go(func() {
			select {
			case <-trigger:
			case <-done:
				tr.phase = "not killed: the trial ended first"
				return
			}
			tr.phase = rig.childKill(id)
			if arrived != nil {
				tr.phase = "during a child's write, " + tr.phase
			}
			tr.kills++
		})
	}
	var actor sync.WaitGroup
	if act := trialAction(n); span > 0 && act != "" {
		tr.action = act
		at := time.Duration(rng.Int64N(int64(span)))
		actor.Go(func() {
			select {
			case <-time.After(at):
			case <-done: // the family settled first: act on it as it is
			}
			rig.act(tr, id)
		})
	}
	rig.driveChildren(tr, id)
	close(done)
	killer.Wait()
	actor.Wait()
	if tr.action != "" {
		rig.driveChildren(tr, id) // what the action left goes on
	}
	tr.took = time.Since(began)
	tr.overlaps = keyOverlaps(rig.ts.snapshot())
	if tr.overlaps > 0 {
		tr.problem("%d overlapping calls under one idempotency key", tr.overlaps)
	}
	if tr.deleted = rig.gone(id); tr.deleted {
		rig.checkDeleted(tr, id)
	} else {
		rig.checkChildren(tr, id)
	}
	return tr
}

// act does the trial's action: cancel the parent and delete it through
// the API (a family with an open turn below its parent is refused 409
// until the cancel's cascade reached it: tried again), or run the
// retention sweep with a retention of 1 ns, which buries every idle
// session (one with an open turn is left alone).
func (rig *crashRig) act(tr *childTrial, id string) {
	s := rig.s
	switch tr.action {
	case "delete":
		s.do("POST", "/sessions/"+id+"/cancel", alice, `{"reason":"the trial deletes it"}`, nil) // 409 with no open turn
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := s.do("DELETE", "/sessions/"+id, alice, "", nil)
			if r.code == http.StatusNoContent {
				break
			}
			if r.code != http.StatusConflict || time.Now().After(deadline) {
				tr.problem("delete: %v", r)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	case "retention":
		if _, err := s.store.Sweep(s.ctx, time.Nanosecond, time.Hour); err != nil {
			tr.problem("retention sweep: %v", err)
		}
	}
	tr.acted = time.Now()
}

// gone reports whether session id was deleted: it has a tombstone.
func (rig *crashRig) gone(id string) bool {
	_, err := dynamo.New(rig.s.emu.Clients.DynamoDB, rig.s.res.Table).Tombstone(rig.s.ctx, id)
	return err == nil
}

// checkDeleted asserts what a deleted family must leave behind: nothing
// but purged tombstones once the leases have passed and the tick ran, no
// tool call after the delete, and no child's write under two keys.
func (rig *crashRig) checkDeleted(tr *childTrial, id string) {
	ids := append([]string{id}, tr.kids...)
	for _, c := range rig.ts.snapshot() { // children created after the delete's read of the parent
		sess, _, _ := strings.Cut(c.EnvKey, "/")
		if sess != "" && !slices.Contains(ids, sess) && rig.gone(sess) {
			ids = append(ids, sess)
		}
	}
	left := rig.s.waitGone(ids...)
	tr.orphans = len(left)
	if len(left) > 0 {
		tr.problem("left of the deleted family: %v", left)
	}
	keys := map[string]map[string]bool{}
	for _, c := range rig.ts.snapshot() {
		sess, _, _ := strings.Cut(c.EnvKey, "/")
		if !slices.Contains(ids, sess) {
			continue
		}
		if c.At.After(tr.acted) && tr.action == "delete" {
			tr.late++
		}
		if keys[sess] == nil {
			keys[sess] = map[string]bool{}
		}
		keys[sess][c.EnvKey] = true
	}
	if tr.late > 0 {
		tr.problem("%d tool calls of the family after its delete", tr.late)
	}
	for sess, k := range keys {
		if len(k) > 1 {
			tr.problem("child %s wrote under %d idempotency keys, want 1", sess, len(k))
		}
	}
}

// childKill SIGKILLs the resume process and starts a fresh one, and says
// where the kill landed, from the parent's facts.
func (rig *crashRig) childKill(id string) string {
	s := rig.s
	if err := s.resume.Load().Kill(); err != nil {
		return "kill failed: " + err.Error()
	}
	rig.spawn++
	f, err := s.tryStart("resume", fmt.Sprintf("resume-c%d", rig.spawn), resumeTimeout)
	if err != nil {
		return "restart failed: " + err.Error()
	}
	s.resume.Store(f)
	facts, err := s.store.Facts(s.ctx, id, 0)
	if err != nil || len(facts) == 0 {
		return "?"
	}
	ended := len(ofType(facts, reducer.ChildEnded))
	switch last := facts[len(facts)-1]; {
	case last.Ends():
		return "after the parent's end"
	case len(ofType(facts, reducer.ChildStarted)) == 0:
		return "before the children started"
	case ended == 0:
		return "while the children ran"
	case ended < childFanOut:
		return "between the children's ends"
	default:
		return "after the children, in the parent's last step"
	}
}

// driveChildren waits for the parent's turn to end and every child to
// report, firing the tick when any of them has a lease run out or a wake
// overdue.
func (rig *crashRig) driveChildren(tr *childTrial, id string) {
	s := rig.s
	deadline := time.Now().Add(time.Minute)
	var lastTick time.Time
	for time.Now().Before(deadline) {
		for _, k := range rig.kidsOf(id) {
			if !slices.Contains(tr.kids, k) {
				tr.kids = append(tr.kids, k)
			}
		}
		if tr.action != "" && rig.gone(id) {
			return // deleted: checkDeleted waits for what is left
		}
		ids := append([]string{id}, tr.kids...)
		settled, tick := true, false
		now := time.Now()
		for _, sid := range ids {
			sess, err := s.store.Load(s.ctx, sid)
			if err != nil {
				settled = settled && tr.action != "" && rig.gone(sid) // a child the sweep deleted
				continue
			}
			st := sess.State
			if st.Turns == 0 || st.Status != reducer.Idle || (st.Parent != nil && !st.Reported) {
				settled = false
			}
			if n := st.Next(now, 0); !n.Due.IsZero() {
				due := n.Due
				if n.Reason.Wake() {
					due = due.Add(wakeGrace)
				}
				tick = tick || now.After(due.Add(20*time.Millisecond))
			}
		}
		if settled && len(ids) == 1+childFanOut {
			return
		}
		if tick && now.Sub(lastTick) > 250*time.Millisecond {
			s.fireTick()
			lastTick = now
		}
		time.Sleep(20 * time.Millisecond)
	}
	tr.problem("the parent and its children did not settle within a minute")
}

// kidsOf lists the children the parent's facts started.
func (rig *crashRig) kidsOf(id string) []string {
	facts, err := rig.s.store.Facts(rig.s.ctx, id, 0)
	if err != nil {
		return nil
	}
	var out []string
	for _, f := range ofType(facts, reducer.ChildStarted) {
		out = append(out, f.Child.ID)
	}
	return out
}

// checkChildren asserts what a trial must leave behind.
func (rig *crashRig) checkChildren(tr *childTrial, id string) {
	s := rig.s
	facts, err := s.store.Facts(s.ctx, id, 0)
	if err != nil {
		rig.t.Fatalf("facts of %s: %v", id, err)
	}
	for i, f := range facts {
		if f.Seq != int64(i+1) {
			tr.problem("parent fact %d has seq %d", i, f.Seq)
			break
		}
	}
	if n := len(ofType(facts, reducer.TurnStarted)); n != 1 {
		tr.problem("%d parent turn.started, want 1", n)
	}
	if n := len(ofType(facts, reducer.TurnCompleted)); n != 1 {
		tr.problem("%d parent turn.completed, want 1: %s", n, summary(facts))
	}
	started := ofType(facts, reducer.ChildStarted)
	ended := map[string]int{}
	for _, f := range ofType(facts, reducer.ChildEnded) {
		ended[f.Child.ID]++
		if f.Child.Status != reducer.TurnCompleted || f.Child.Output != "Worker done." {
			tr.problem("child %s ended %s with %q", f.Child.ID, f.Child.Status, f.Child.Output)
		}
	}
	if len(started) != childFanOut {
		tr.problem("%d child.started, want %d", len(started), childFanOut)
	}
	calls := rig.ts.snapshot()
	for _, f := range started {
		c := f.Child
		if !slices.Contains(tr.kids, c.ID) {
			tr.kids = append(tr.kids, c.ID)
		}
		if want := reducer.ChildID(id, f.Turn, c.ToolCallID); c.ID != want {
			tr.problem("child id %s, want the derived %s", c.ID, want)
		}
		if ended[c.ID] != 1 {
			tr.problem("child %s delivered %d times, want once", c.ID, ended[c.ID])
		}
		keys := map[string]bool{}
		for _, tc := range calls {
			if strings.HasPrefix(tc.EnvKey, c.ID+"/") {
				keys[tc.EnvKey] = true
			}
		}
		if tr.action != "" && rig.gone(c.ID) {
			// The sweep deleted it once it was idle: its end was
			// delivered (checked above); nothing of it may be left.
			if len(keys) > 1 {
				tr.problem("child %s wrote under %d idempotency keys, want 1", c.ID, len(keys))
			}
			if left := rig.s.waitGone(c.ID); len(left) > 0 {
				tr.orphans += len(left)
				tr.problem("left of the deleted child %s: %v", c.ID, left)
			}
			continue
		}
		cf, err := s.store.Facts(s.ctx, c.ID, 0)
		if err != nil {
			tr.problem("child %s: %v", c.ID, err)
			continue
		}
		if n := len(ofType(cf, reducer.SessionCreated)); n != 1 {
			tr.problem("child %s created %d times", c.ID, n)
		}
		if n := len(ofType(cf, reducer.TurnStarted)); n != 1 {
			tr.problem("child %s started %d turns, want 1", c.ID, n)
		}
		if n := len(ofType(cf, reducer.TurnCompleted)); n != 1 {
			tr.problem("child %s: %d turn.completed: %s", c.ID, n, summary(cf))
		}
		if n := len(ofType(cf, reducer.ChildReported)); n != 1 {
			tr.problem("child %s reported %d times, want once", c.ID, n)
		}
		if len(keys) != 1 {
			tr.problem("child %s wrote under %d idempotency keys, want 1", c.ID, len(keys))
		}
	}
	// Nothing lost: the parent's rebuilt conversation holds each child's
	// answer as its call's result.
	sess, err := s.store.Load(s.ctx, id)
	if err != nil {
		rig.t.Fatalf("load %s: %v", id, err)
	}
	results := 0
	for _, m := range sess.History {
		for _, c := range m.Content {
			if c.Type == conversation.ToolResult && string(c.Output) == `"Worker done."` && !c.IsError {
				results++
			}
		}
	}
	if results != childFanOut {
		tr.problem("the parent's conversation holds %d child results, want %d", results, childFanOut)
	}
}
