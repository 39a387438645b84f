package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// recorder is a model that records each request it is asked for, as the
// JSON of its messages and its estimated input tokens, before playing it
// on next. When kill is set it is called with the request's index; a
// non-nil context.CancelFunc returned is called and the step fails, as
// when the invocation dies in it.
type recorder struct {
	next model.Model
	mu   sync.Mutex
	reqs [][]byte
	est  []int64
	kill func(i int, req model.Request) context.CancelFunc
}

func (r *recorder) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	b, _ := json.Marshal(req.Messages)
	r.mu.Lock()
	i := len(r.reqs)
	r.reqs = append(r.reqs, b)
	r.est = append(r.est, model.Estimate(req))
	r.mu.Unlock()
	if r.kill != nil {
		if cancel := r.kill(i, req); cancel != nil {
			cancel()
			return func(yield func(model.Event, error) bool) { yield(model.Event{}, ctx.Err()) }
		}
	}
	return r.next.Stream(ctx, req)
}

func (r *recorder) requests() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.reqs...)
}

// blocked is a summariser that never answers: it reports that it was
// asked, then waits for the invocation to end.
type blocked struct{ asked chan struct{} }

func (b blocked) Stream(ctx context.Context, _ model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		b.asked <- struct{}{}
		<-ctx.Done()
		yield(model.Event{}, ctx.Err())
	}
}

const (
	// longAnswer is a one-step turn of about 330 bytes of text.
	longAnswer = `{"steps":[{"text":"` + "Noted. Here is a long and careful answer that repeats itself so that every turn adds a few hundred bytes to the history of the session, " +
		"which is what makes the context grow until compaction has to step in and fold the older turns into a summary of them." + `"}]}`
	summaryScript = `{"steps":[{"text":"The user sent numbered notes; the agent acknowledged each at length."}]}`
	budget        = 900
)

func note(i int) string { return fmt.Sprintf("Note %03d: %s", i, strings.Repeat("lorem ipsum ", 12)) }

// compactingAgent is the demo agent on a recorder of m, compacting past
// budget input tokens, keeping two turns, summarised by summariser.
func compactingAgent(t *testing.T, m model.Model, summariser model.Model, lim turn.Limits) (*turn.Agent, *recorder) {
	return compactingAgentAt(t, budget, m, summariser, lim)
}

func compactingAgentAt(t *testing.T, budget int64, m model.Model, summariser model.Model, lim turn.Limits) (*turn.Agent, *recorder) {
	rec := &recorder{next: m}
	a := demoAgent(t, rec, lim)
	a.Compaction = &turn.Compaction{InputTokens: budget, KeepTurns: 2, Model: summariser, Name: "summariser",
		Price: &reducer.Price{InputPerMTok: 1, OutputPerMTok: 5}}
	a.Price = &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}
	return a, rec
}

// budgetBefore is the input token budget the first request of turn n (from
// 0) of a session playing m, a note a turn, just passes, and every request
// before it stays within: it runs such a session without compaction.
func budgetBefore(t *testing.T, m model.Model, n int) int64 {
	t.Helper()
	rec := &recorder{next: m}
	inv := fresh(t, demoAgent(t, rec, turn.Limits{}))
	id := newSession(t, inv, note(0))
	converse(t, inv, id, 0, n)
	seen := len(rec.est)
	converse(t, inv, id, n, 1)
	b := rec.est[seen] - 1
	for i, e := range rec.est[:seen] {
		if e > b {
			t.Fatalf("request %d is %d tokens, over the budget %d before turn %d", i, e, b, n)
		}
	}
	return b
}

// converse posts n notes to session id, running a turn for each.
func converse(t *testing.T, inv *invocation, id string, from, n int) {
	t.Helper()
	ctx := ctxT(t)
	for i := from; i < from+n; i++ {
		if i > 0 {
			if _, err := inv.sessions.Post(ctx, id, teststack.Alice, note(i)); err != nil {
				t.Fatal(err)
			}
		}
		out, err := inv.runner.Start(ctx, id)
		if err != nil || out.Kind != turn.Completed {
			t.Fatalf("turn %d: %+v, %v", i, out, err)
		}
	}
}

func ofType(fs []reducer.Fact, typ reducer.Type) []reducer.Fact {
	var out []reducer.Fact
	for _, f := range fs {
		if f.Type == typ {
			out = append(out, f)
		}
	}
	return out
}

func TestCompactionKeepsInputUnderBudget(t *testing.T) {
	t.Parallel()
	agent, rec := compactingAgent(t, script(t, longAnswer), script(t, summaryScript), turn.Limits{})
	inv := fresh(t, agent)
	id := newSession(t, inv, note(0))
	const turns = 30
	converse(t, inv, id, 0, turns)

	for i, n := range rec.est {
		if n > budget {
			t.Errorf("request %d: %d input tokens, over the budget of %d", i, n, budget)
		}
	}
	fs := facts(t, inv, id)
	compactions := ofType(fs, reducer.ContextCompacted)
	if len(compactions) < turns/5 {
		t.Fatalf("%d compactions in %d turns, want at least %d", len(compactions), turns, turns/5)
	}
	// The originals stay for audit: every note is a fact, every turn's
	// stream is still there.
	if got := len(ofType(fs, reducer.MessageReceived)); got != turns {
		t.Errorf("%d messages recorded, want %d", got, turns)
	}
	first := ofType(fs, reducer.TurnStarted)[0]
	if ps, st := readParts(t, inv, id, first.Stream); st != streams.Completed || len(ps) == 0 {
		t.Errorf("the first turn's stream: %d parts, status %q", len(ps), st)
	}
	// A compacting turn marks it in its stream.
	c := compactions[len(compactions)-1]
	var marked bool
	for _, f := range fs {
		if f.Type == reducer.TurnStarted && f.Turn == c.Turn {
			ps, _ := readParts(t, inv, id, f.Stream)
			for _, p := range ps {
				if p.Type == parts.DataCompacted {
					var got reducer.Compaction
					if err := json.Unmarshal(p.Data, &got); err != nil || got != *c.Compaction {
						t.Errorf("data-compacted %s (%v), want the fact's %+v", p.Data, err, *c.Compaction)
					}
					marked = true
				}
			}
		}
	}
	if !marked {
		t.Error("no data-compacted part in the compacting turn's stream")
	}
	if c.Compaction.Before <= budget || c.Compaction.After >= c.Compaction.Before || c.Compaction.Model != "summariser" {
		t.Errorf("compaction %+v: want before over %d, after below before", *c.Compaction, budget)
	}

	// The session rebuilds from the summary and the kept turns.
	sess, err := inv.sessions.Load(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	h := sess.History
	if sess.State.Compactions != len(compactions) || len(h) == 0 || !strings.HasPrefix(h[0].Content[0].Text, conversation.SummaryPrefix) {
		t.Fatalf("history of %d messages after %d compactions starts %+v", len(h), sess.State.Compactions, h[0])
	}
	if n := model.Estimate(model.Request{Messages: h}); n > budget {
		t.Errorf("the rebuilt history is %d tokens, over the budget of %d", n, budget)
	}
	// Usage counts the steps and the summariser's calls.
	var want reducer.Usage
	for _, f := range fs {
		if f.Type == reducer.TurnCompleted {
			want = want.Add(*f.Usage)
		}
		if f.Compaction != nil {
			want = want.Add(f.Compaction.Usage)
		}
	}
	if sess.State.Usage != want || want.CostMicroUSD == 0 {
		t.Errorf("session usage %+v, want %+v", sess.State.Usage, want)
	}
}

// TestCompactionCrashInSummariser kills the invocation while the summary is
// being written: nothing was recorded, and the next invocation compacts
// and finishes the turn.
func TestCompactionCrashInSummariser(t *testing.T) {
	t.Parallel()
	lim := turn.Limits{Budget: 3 * time.Second, Margin: 100 * time.Millisecond, LeaseGrace: 10 * time.Millisecond}
	b := budgetBefore(t, script(t, longAnswer), 3)
	agent, _ := compactingAgentAt(t, b, script(t, longAnswer), script(t, summaryScript), lim)
	inv := fresh(t, agent)
	id := newSession(t, inv, note(0))
	converse(t, inv, id, 0, 3)
	if n := len(ofType(facts(t, inv, id), reducer.ContextCompacted)); n != 0 {
		t.Fatalf("%d compactions before the budget is passed", n)
	}
	ctx := ctxT(t)
	if _, err := inv.sessions.Post(ctx, id, teststack.Alice, note(3)); err != nil {
		t.Fatal(err)
	}
	before, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	asked := make(chan struct{}, 1)
	dying := *agent
	dying.Compaction = &turn.Compaction{InputTokens: b, KeepTurns: 2, Model: blocked{asked}}
	dctx, kill := context.WithCancel(ctx)
	go func() { <-asked; kill() }()
	if out, err := fresh(t, &dying).runner.Start(dctx, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed in the summariser: %+v, %v", out, err)
	}
	after, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.State.Compactions != 0 || after.State.Status != reducer.Running || len(after.History) != len(before.History) {
		t.Fatalf("after the crash: %d compactions, status %s, %d messages of history (had %d)",
			after.State.Compactions, after.State.Status, len(after.History), len(before.History))
	}

	next := fresh(t, agent)
	pastLease(next, after.State.Turn.Lease)
	out, err := next.runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume after the crash: %+v, %v", out, err)
	}
	if n := len(ofType(facts(t, inv, id), reducer.ContextCompacted)); n != 1 {
		t.Fatalf("%d compactions after the resume, want 1", n)
	}
	converse(t, next, id, 4, 1) // and the session goes on
}

// TestCompactionFactFaults fails the write of the compaction's fact. A
// write that surely failed leaves the history as it was and the turn
// suspended; the resumed turn compacts once. A write whose answer was
// lost counts once.
func TestCompactionFactFaults(t *testing.T) {
	t.Parallel()
	onEmulator(t) // counts requests, injects faults or reads the queue
	for _, c := range []struct {
		name  string
		fault faults.Kind
		times int
	}{
		{"failed", faults.ServerError, 100},
		{"lost answer", faults.LostResponse, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent, _ := compactingAgentAt(t, budgetBefore(t, script(t, longAnswer), 3), script(t, longAnswer), script(t, summaryScript), turn.Limits{})
			inv := fresh(t, agent)
			id := newSession(t, inv, note(0))
			converse(t, inv, id, 0, 3)
			ctx := ctxT(t)
			if _, err := inv.sessions.Post(ctx, id, teststack.Alice, note(3)); err != nil {
				t.Fatal(err)
			}
			ft := faults.New(nil, faults.Rule{Op: "dynamodb:TransactWriteItems", Body: string(reducer.ContextCompacted), Times: c.times, Fault: c.fault})
			faulty := fresh(t, agent)
			faulty.sessions = teststack.Sessions(faults.Clients(env.URL(), ft), env)
			faulty.runner = &turn.Runner{Sessions: faulty.sessions, Agents: turn.AgentMap{agent.Name: agent}, Waker: faulty.sessions.Waker}
			out, err := faulty.runner.Start(ctx, id)
			if ft.Count("dynamodb:TransactWriteItems") == 0 {
				t.Fatal("no fault injected")
			}
			fs := facts(t, inv, id)
			compactions := ofType(fs, reducer.ContextCompacted)
			if c.fault == faults.LostResponse {
				if err != nil || out.Kind != turn.Completed || len(compactions) != 1 {
					t.Fatalf("lost answer: %+v, %v, %d compactions", out, err, len(compactions))
				}
				return
			}
			if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseThrottled || len(compactions) != 0 {
				t.Fatalf("failed write: %+v, %v, %d compactions", out, err, len(compactions))
			}
			sess, err := inv.sessions.Load(ctx, id)
			if err != nil || sess.State.Compactions != 0 {
				t.Fatalf("load after the failed compaction: %v, %+v", err, sess)
			}
			ft.Set()
			passWake(t, faulty, id)
			out, err = faulty.runner.Resume(ctx, id)
			if err != nil || out.Kind != turn.Completed {
				t.Fatalf("resume: %+v, %v", out, err)
			}
			if n := len(ofType(facts(t, inv, id), reducer.ContextCompacted)); n != 1 {
				t.Fatalf("%d compactions after the resume, want 1", n)
			}
		})
	}
}

// TestCompactionSurvivesCrashInNextStep kills the invocation in the step
// right after the compaction was recorded: the resumed invocation rebuilds
// the compacted input byte for byte.
func TestCompactionSurvivesCrashInNextStep(t *testing.T) {
	t.Parallel()
	lim := turn.Limits{Budget: 3 * time.Second, Margin: 100 * time.Millisecond, LeaseGrace: 10 * time.Millisecond}
	agent, rec := compactingAgentAt(t, budgetBefore(t, script(t, slowThree).WithDelay(0), 3), script(t, slowThree), script(t, summaryScript), lim)
	inv := fresh(t, agent)
	id := newSession(t, inv, note(0))
	converse(t, inv, id, 0, 3)
	ctx := ctxT(t)
	if _, err := inv.sessions.Post(ctx, id, teststack.Alice, note(3)); err != nil {
		t.Fatal(err)
	}
	dctx, kill := context.WithCancel(ctx)
	seen := len(rec.requests())
	rec.kill = func(i int, _ model.Request) context.CancelFunc {
		if i == seen+1 { // the turn's second step: the first compacted and checkpointed
			return kill
		}
		return nil
	}
	if out, err := inv.runner.Start(dctx, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed after compacting: %+v, %v", out, err)
	}
	rec.kill = nil
	killed := rec.requests()[seen+1]
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil || sess.State.Compactions != 1 || sess.State.Status != reducer.Running {
		t.Fatalf("after the crash: %v, %+v", err, sess)
	}
	next := fresh(t, agent)
	pastLease(next, sess.State.Turn.Lease)
	out, err := next.runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume: %+v, %v", out, err)
	}
	if got := rec.requests()[seen+2]; string(got) != string(killed) {
		t.Fatalf("the resumed step's input differs from the killed one's:\n%s\n%s", got, killed)
	}
	if n := len(ofType(facts(t, inv, id), reducer.ContextCompacted)); n != 1 {
		t.Fatalf("%d compactions, want 1", n)
	}
}

// pastLease moves inv's clock past lease, as when the reaper finds the turn.
func pastLease(inv *invocation, lease time.Time) {
	d := time.Until(lease) + time.Millisecond
	inv.sessions.Now = func() time.Time { return time.Now().Add(d) }
}

// counted is a model whose provider counts tokens: always n.
type counted struct {
	model.Model
	n     int64
	calls int
}

func (c *counted) CountTokens(context.Context, model.Request) (int64, error) {
	c.calls++
	return c.n, nil
}

// TestCompactionAsksTheProvider shows the provider's count decides once the
// estimate nears the budget: a count under it does not compact, one over
// it does.
func TestCompactionAsksTheProvider(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		count int64
		want  int
	}{{300, 0}, {5000, 1}} {
		t.Run(fmt.Sprint(c.count), func(t *testing.T) {
			m := &counted{Model: script(t, longAnswer), n: c.count}
			agent := demoAgent(t, m, turn.Limits{})
			agent.Compaction = &turn.Compaction{InputTokens: budgetBefore(t, script(t, longAnswer), 3), Model: script(t, summaryScript)}
			inv := fresh(t, agent)
			id := newSession(t, inv, note(0))
			converse(t, inv, id, 0, 4)
			if m.calls == 0 {
				t.Fatal("the provider was never asked to count")
			}
			if n := len(ofType(facts(t, inv, id), reducer.ContextCompacted)); n != c.want {
				t.Fatalf("%d compactions, want %d", n, c.want)
			}
			if c.want == 1 {
				if f := ofType(facts(t, inv, id), reducer.ContextCompacted)[0]; f.Compaction.Before != c.count {
					t.Fatalf("compaction recorded %d tokens before, want the provider's %d", f.Compaction.Before, c.count)
				}
			}
		})
	}
}

// failing is a summariser that fails with kind while down, then plays
// next.
type failing struct {
	kind  model.ErrorKind
	down  *bool
	calls *int
	next  model.Model
}

func (f failing) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	*f.calls++
	if !*f.down {
		return f.next.Stream(ctx, req)
	}
	return func(yield func(model.Event, error) bool) {
		yield(model.Event{}, &model.Error{Kind: f.kind, Err: errors.New("summariser: " + string(f.kind))})
	}
}

// TestCompactionSummariserRefuses shows a summariser that cannot succeed
// costs the turn nothing but the try: the steps run on the whole history,
// and the invocation does not ask again.
func TestCompactionSummariserRefuses(t *testing.T) {
	t.Parallel()
	calls, down := 0, true
	agent := demoAgent(t, script(t, slowThree), turn.Limits{})
	agent.Compaction = &turn.Compaction{InputTokens: 300, KeepTurns: -1, Model: failing{kind: model.InvalidRequest, down: &down, calls: &calls}}
	inv := fresh(t, agent)
	id := newSession(t, inv, note(0))
	converse(t, inv, id, 0, 3)
	// Once in each later turn (the first has no history to summarise),
	// though each of its three steps is over the budget.
	if calls != 2 {
		t.Fatalf("the summariser was asked %d times, want 2", calls)
	}
	sess, err := inv.sessions.Load(ctxT(t), id)
	if err != nil || sess.State.Compactions != 0 || sess.State.Turns != 3 {
		t.Fatalf("after failed compactions: %v, %+v", err, sess.State)
	}
}

// TestCompactionSummariserDown shows a summariser that is down for now (a
// transient fault) costs time, not the turn: it is tried again within the
// step's time, then the turn suspends for the model like a step's fault,
// sending nothing over the budget; once it is back the turn compacts and
// completes.
func TestCompactionSummariserDown(t *testing.T) {
	t.Parallel()
	calls, down := 0, true
	lim := turn.Limits{ModelRetry: model.RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: time.Millisecond}}
	agent, rec := compactingAgentAt(t, budgetBefore(t, script(t, longAnswer), 3), script(t, longAnswer), nil, lim)
	agent.Compaction.Model = failing{kind: model.Overloaded, down: &down, calls: &calls, next: script(t, summaryScript)}
	inv := fresh(t, agent)
	id := newSession(t, inv, note(0))
	converse(t, inv, id, 0, 3)
	ctx := ctxT(t)
	if _, err := inv.sessions.Post(ctx, id, teststack.Alice, note(3)); err != nil {
		t.Fatal(err)
	}
	asked := len(rec.requests())
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseModelUnavailable || calls != 3 {
		t.Fatalf("with the summariser down: %+v, %v, %d calls; want suspended for the model after 3", out, err, calls)
	}
	if n := len(rec.requests()); n != asked {
		t.Fatalf("%d steps were asked over the budget while the summariser was down", n-asked)
	}
	down = false
	passWake(t, inv, id)
	out, err = inv.runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("with the summariser back: %+v, %v", out, err)
	}
	if n := len(ofType(facts(t, inv, id), reducer.ContextCompacted)); n != 1 {
		t.Fatalf("%d compactions, want 1", n)
	}
}

// TestCompactionCrashBeforeTheFact kills the invocation after the compacted
// snapshot is written and just before the fact naming it: the compaction is
// not done, the history is as it was, and the resumed turn compacts once.
func TestCompactionCrashBeforeTheFact(t *testing.T) {
	t.Parallel()
	onEmulator(t) // counts requests, injects faults or reads the queue
	ctx := ctxT(t)
	lim := turn.Limits{LeaseGrace: time.Millisecond}
	agent, _ := compactingAgentAt(t, budgetBefore(t, script(t, longAnswer), 3), script(t, longAnswer), script(t, summaryScript), lim)
	inv := fresh(t, agent)
	id := newSession(t, inv, note(0))
	converse(t, inv, id, 0, 3)
	if _, err := inv.sessions.Post(ctx, id, teststack.Alice, note(3)); err != nil {
		t.Fatal(err)
	}
	before, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	dying, kill := context.WithCancel(ctx)
	defer kill()
	die := &dieOn{marker: string(reducer.ContextCompacted), kill: kill}
	ds := teststack.Sessions(faults.Clients(env.URL(), faults.New(die)), env)
	dr := &turn.Runner{Sessions: ds, Agents: turn.AgentMap{agent.Name: agent}, Waker: ds.Waker}
	if out, err := dr.Start(dying, id); !die.died || !errors.Is(err, context.Canceled) {
		t.Fatalf("dying invocation: %+v, %v (died %v)", out, err, die.died)
	}
	after, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.State.Compactions != 0 || after.State.Status != reducer.Running || len(after.History) != len(before.History) {
		t.Fatalf("after the crash: %d compactions, %s, %d messages of history (had %d)",
			after.State.Compactions, after.State.Status, len(after.History), len(before.History))
	}
	next := fresh(t, agent)
	pastLease(next, after.State.Turn.Lease)
	if out, err := next.runner.Resume(ctx, id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume: %+v, %v", out, err)
	}
	if n := len(ofType(facts(t, inv, id), reducer.ContextCompacted)); n != 1 {
		t.Fatalf("%d compactions after the resume, want 1", n)
	}
}

// stepper is a model for a long turn: each step says a few hundred bytes
// and calls get_weather, until the last answers. It counts the steps it
// played, so it needs no steps left in its input.
type stepper struct {
	mu    sync.Mutex
	n     int // steps in the turn
	count int
}

func (s *stepper) Stream(ctx context.Context, _ model.Request) iter.Seq2[model.Event, error] {
	s.mu.Lock()
	i := s.count
	s.count++
	s.mu.Unlock()
	return func(yield func(model.Event, error) bool) {
		text := fmt.Sprintf("Step %d: %s", i, strings.Repeat("checking one more city before I answer, ", 5))
		if !yield(model.Event{Type: model.TextDelta, Text: text}, nil) {
			return
		}
		if i < s.n-1 {
			if !yield(model.Event{Type: model.ToolCall, Call: model.Call{ID: fmt.Sprint("call_", i), Name: "get_weather",
				Input: json.RawMessage(fmt.Sprintf(`{"city":"C%d"}`, i))}}, nil) {
				return
			}
			yield(model.Event{Type: model.Finish, Stop: model.StopToolCalls, Usage: model.Usage{InputTokens: 100, OutputTokens: 60}}, nil)
			return
		}
		yield(model.Event{Type: model.Finish, Stop: model.StopEnd, Usage: model.Usage{InputTokens: 100, OutputTokens: 60}}, nil)
	}
}

// turnSummaries are the data-compacted parts of a stream that summarise
// its turn's steps.
func turnSummaries(ps []parts.Part) []parts.Part {
	var out []parts.Part
	for _, p := range ps {
		if p.Type == parts.DataCompacted && strings.Contains(string(p.Data), `"summary"`) {
			out = append(out, p)
		}
	}
	return out
}

// TestCompactionOfALongTurn: a first turn of 30 steps has no ended turns
// to summarise, so its own earlier steps are: every request stays under
// the budget, the stream says where, the snapshot the turn leaves is
// small, and the summariser's usage counts in the turn's.
func TestCompactionOfALongTurn(t *testing.T) {
	t.Parallel()
	const budget, steps = 1200, 30
	rec := &recorder{next: &stepper{n: steps}}
	agent := demoAgent(t, rec, turn.Limits{MaxStepsPerInvocation: steps + 1})
	agent.Compaction = &turn.Compaction{InputTokens: budget, KeepSteps: 3, Model: script(t, summaryScript)}
	inv := fresh(t, agent)
	id := newSession(t, inv, note(0))
	out, err := inv.runner.Start(ctxT(t), id)
	if err != nil || out.Kind != turn.Completed || out.Steps != steps {
		t.Fatalf("turn: %+v, %v", out, err)
	}
	for i, n := range rec.est {
		if n > budget {
			t.Errorf("request %d: %d input tokens, over the budget of %d", i, n, budget)
		}
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	sums := turnSummaries(ps)
	if len(sums) < 2 {
		t.Fatalf("%d summaries of the turn's steps, want several", len(sums))
	}
	t.Logf("%d steps, %d summaries of the turn's steps, largest request %d tokens", steps, len(sums), slices.Max(rec.est))
	var summariser reducer.Usage
	for _, p := range sums {
		var d struct {
			Usage reducer.Usage `json:"usage"`
		}
		if err := json.Unmarshal(p.Data, &d); err != nil {
			t.Fatal(err)
		}
		summariser = summariser.Add(d.Usage)
	}
	var stepsUsage reducer.Usage
	for _, s := range conversation.Replay(ps).Steps {
		stepsUsage = stepsUsage.Add(s.Usage)
	}
	if summariser.InputTokens == 0 || out.Usage.InputTokens != stepsUsage.InputTokens+summariser.InputTokens {
		t.Fatalf("turn usage %+v: want the steps' %+v plus the summaries' %+v", out.Usage, stepsUsage, summariser)
	}
	sess, err := inv.sessions.Load(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if n := model.Estimate(model.Request{Messages: sess.History}); n > budget {
		t.Fatalf("the snapshot the turn left is %d tokens", n)
	}
}

// TestCompactionOfALongTurnSurvivesACrash kills the invocation in the first
// step after the turn's steps were summarised: the resumed invocation's
// first request is that step's input, byte for byte.
func TestCompactionOfALongTurnSurvivesACrash(t *testing.T) {
	t.Parallel()
	const budget, steps = 1200, 20
	model_ := &stepper{n: steps}
	rec := &recorder{next: model_}
	lim := turn.Limits{MaxStepsPerInvocation: steps + 1, LeaseGrace: time.Millisecond}
	agent := demoAgent(t, rec, lim)
	agent.Compaction = &turn.Compaction{InputTokens: budget, KeepSteps: 3, Model: script(t, summaryScript)}
	inv := fresh(t, agent)
	id := newSession(t, inv, note(0))
	ctx := ctxT(t)
	dying, kill := context.WithCancel(ctx)
	killed := -1
	rec.kill = func(i int, req model.Request) context.CancelFunc {
		b, _ := json.Marshal(req.Messages)
		if killed < 0 && strings.Contains(string(b), "Summary of this turn") {
			killed = i
			return kill
		}
		return nil
	}
	if out, err := inv.runner.Start(dying, id); !errors.Is(err, context.Canceled) || killed < 0 {
		t.Fatalf("killed after a summary: %+v, %v (killed at %d)", out, err, killed)
	}
	rec.kill = nil
	want := rec.requests()[killed]
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	next := fresh(t, agent)
	pastLease(next, sess.State.Turn.Lease)
	out, err := next.runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume: %+v, %v", out, err)
	}
	if got := rec.requests()[killed+1]; string(got) != string(want) {
		t.Fatalf("the resumed step's input differs from the killed one's:\n%s\n%s", got, want)
	}
}
