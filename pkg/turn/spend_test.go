package turn_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// metaUsage sums the usage of the message-metadata parts of a turn's
// stream: what each step reported.
func metaUsage(t *testing.T, inv *invocation, id, stream string) reducer.Usage {
	t.Helper()
	ps, _ := readParts(t, inv, id, stream)
	var sum reducer.Usage
	for _, p := range ps {
		if p.Type != parts.MessageMetadata {
			continue
		}
		var m struct {
			Usage reducer.Usage `json:"usage"`
		}
		if err := json.Unmarshal(p.MessageMetadata, &m); err != nil {
			t.Fatal(err)
		}
		sum = sum.Add(m.Usage)
	}
	return sum
}

func spendAgent(t *testing.T, sp turn.Spend, price *reducer.Price) *turn.Agent {
	a := demoAgent(t, script(t, threeSteps), turn.Limits{Spend: sp})
	a.Price = price
	return a
}

// A turn past its token cap suspends for the limit at the step boundary,
// waits for an operator, and resumes to completion once the cap is raised.
func TestTurnTokenCapSuspendsAndRaiseResumes(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent := spendAgent(t, turn.Spend{Turn: reducer.Caps{InputTokens: 1}}, nil)
	inv := fresh(t, agent)
	id := newSession(t, inv, "What is the weather?")

	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Suspended || out.Cause != reducer.CauseLimit || out.Steps != 1 {
		t.Fatalf("outcome = %+v, want suspended for limit after 1 step", out)
	}
	st := teststack.Load(t, inv.sessions, id)
	if n := st.Next(inv.sessions.Clock(), 0); n.Reason != reducer.ReasonOperator || n.Action != reducer.None {
		t.Fatalf("need = %+v, want to wait for an operator", n)
	}
	// No step was cut: the stream holds one whole step and the marker.
	ps, closed := readParts(t, inv, id, out.Turn)
	if closed != streams.Open || ps[len(ps)-1].Type != parts.DataSuspended || !strings.Contains(string(ps[len(ps)-1].Data), `"limit"`) {
		t.Fatalf("stream: closed=%q last=%+v", closed, ps[len(ps)-1])
	}
	if got := metaUsage(t, inv, id, out.Turn); got != st.Usage || got.Steps != 1 || got.InputTokens < 1 {
		t.Fatalf("session usage %+v, step metadata sum %+v", st.Usage, got)
	}
	if _, err := inv.runner.Resume(ctx, id); !errors.Is(err, turn.ErrNotResumable) {
		t.Fatalf("Resume before a raise: %v", err)
	}

	drainWakes(t, inv)
	if err := inv.sessions.Raise(ctx, id, operator, reducer.Raise{Turn: reducer.Caps{InputTokens: 1 << 30}}); err != nil {
		t.Fatal(err)
	}
	if w := receiveWake(t, inv, id); w.Reason != wake.Raised {
		t.Fatalf("wake = %+v, want raised", w)
	}
	out, err = fresh(t, agent).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume after raise: %+v, %v", out, err)
	}
	st = teststack.Load(t, inv.sessions, id)
	if got := metaUsage(t, inv, id, out.Turn); got != st.Usage || got.Steps != 3 {
		t.Fatalf("session usage %+v, step metadata sum %+v", st.Usage, got)
	}
	fs := facts(t, inv, id)
	if count(fs, reducer.LimitsRaised) != 1 || fs[len(fs)-1].Type != reducer.TurnCompleted {
		t.Fatalf("facts = %v", types(fs))
	}
}

// onExceeded fail: the turn fails with limit, saying which cap.
func TestTurnTokenCapFails(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	inv := fresh(t, spendAgent(t, turn.Spend{Turn: reducer.Caps{OutputTokens: 1}, Fail: true}, nil))
	id := newSession(t, inv, "What is the weather?")
	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Failed || out.Failure == nil || out.Failure.Kind != reducer.FailLimit {
		t.Fatalf("outcome = %+v, want failed with limit", out)
	}
	if msg := out.Failure.Error; !strings.Contains(msg, "turn:") || !strings.Contains(msg, "output tokens reach the cap of 1") {
		t.Fatalf("failure message %q does not name the limit and cap", msg)
	}
	fs := facts(t, inv, id)
	last := fs[len(fs)-1]
	if last.Type != reducer.TurnFailed || last.Failure.Kind != reducer.FailLimit || last.Usage.Steps != 1 {
		t.Fatalf("last fact = %+v", last)
	}
}

// A cost cap with a price table: each step's metadata carries its cost,
// and the turn stops once the cost reaches the cap.
func TestTurnCostCapWithPriceTable(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	price := &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}
	inv := fresh(t, spendAgent(t, turn.Spend{Turn: reducer.Caps{Cost: 0.000001}}, price))
	id := newSession(t, inv, "What is the weather?")
	out, err := inv.runner.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != turn.Suspended || out.Cause != reducer.CauseLimit || out.Steps != 1 {
		t.Fatalf("outcome = %+v, want suspended for limit after 1 step", out)
	}
	u := metaUsage(t, inv, id, out.Turn)
	if want := price.Cost(u.InputTokens, u.OutputTokens); u.CostMicroUSD != want || want <= 0 {
		t.Fatalf("step cost %d micro-USD, want %d from the price table", u.CostMicroUSD, want)
	}
	if st := teststack.Load(t, inv.sessions, id); st.Usage != u {
		t.Fatalf("session usage %+v, step metadata %+v", st.Usage, u)
	}
}

// A session cap counts the ended turns: a second turn stops once the
// session's total reaches it, and a session-level raise resumes it.
func TestSessionCapAcrossTurns(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	inv := fresh(t, spendAgent(t, turn.Spend{}, nil))
	id := newSession(t, inv, "What is the weather?")
	if out, err := inv.runner.Start(ctx, id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("first turn: %+v, %v", out, err)
	}
	st := teststack.Load(t, inv.sessions, id)
	first := st.Usage
	teststack.Post(t, inv.sessions, id, st, "And tomorrow?")

	capped := spendAgent(t, turn.Spend{Session: reducer.Caps{InputTokens: first.InputTokens + 1}}, nil)
	out, err := fresh(t, capped).runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseLimit || out.Steps != 1 {
		t.Fatalf("second turn: %+v, %v; want suspended for limit after 1 step", out, err)
	}
	if err := inv.sessions.Raise(ctx, id, operator, reducer.Raise{Session: reducer.Caps{InputTokens: 1 << 40}}); err != nil {
		t.Fatal(err)
	}
	out, err = fresh(t, capped).runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume after raise: %+v, %v", out, err)
	}
	st = teststack.Load(t, inv.sessions, id)
	if st.Caps.InputTokens != 1<<40 || st.Usage.Steps != 6 {
		t.Fatalf("state caps %+v, usage %+v", st.Caps, st.Usage)
	}
}

// A raise that is malformed, or for a turn not at a limit, writes nothing.
func TestRaiseRefused(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	inv := fresh(t, spendAgent(t, turn.Spend{}, nil))
	id := newSession(t, inv, "What is the weather?")
	before := len(facts(t, inv, id))
	if err := inv.sessions.Raise(ctx, id, operator, reducer.Raise{Turn: reducer.Caps{InputTokens: 5}}); !errors.Is(err, session.ErrNotPending) {
		t.Fatalf("raise while idle: %v, want ErrNotPending", err)
	}
	for _, r := range []reducer.Raise{{}, {Turn: reducer.Caps{InputTokens: -1}}, {Session: reducer.Caps{Cost: -2}}} {
		if err := inv.sessions.Raise(ctx, id, operator, r); !errors.Is(err, session.ErrBadCaps) {
			t.Fatalf("raise %+v: %v, want ErrBadCaps", r, err)
		}
	}
	if n := len(facts(t, inv, id)); n != before {
		t.Fatalf("refused raises wrote %d facts", n-before)
	}
}

// A limit suspension names the cap the turn reached, its scope, measure,
// cap and usage, in the fact and the state.
func TestLimitSuspensionNamesTheCap(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	price := &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}
	inv := fresh(t, spendAgent(t, turn.Spend{Turn: reducer.Caps{Cost: 0.000001}}, price))
	id := newSession(t, inv, "What is the weather?")
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Cause != reducer.CauseLimit {
		t.Fatalf("start: %+v, %v", out, err)
	}
	u := metaUsage(t, inv, id, out.Turn)
	fs := facts(t, inv, id)
	want := reducer.Limit{Scope: reducer.ScopeTurn, Measure: reducer.MeasureCost, Cap: 0.000001, Usage: float64(u.CostMicroUSD) / 1e6}
	if last := fs[len(fs)-1]; last.Type != reducer.TurnSuspended || last.Limit == nil || *last.Limit != want {
		t.Fatalf("the limit suspension %+v names %+v, want %+v", last, last.Limit, want)
	}
	if st := teststack.Load(t, inv.sessions, id); st.Turn.Limit != want {
		t.Fatalf("state limit %+v, want %+v", st.Turn.Limit, want)
	}

	// A session cap, second turn.
	inv = fresh(t, spendAgent(t, turn.Spend{}, nil))
	id = newSession(t, inv, "What is the weather?")
	if out, err := inv.runner.Start(ctx, id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("first turn: %+v, %v", out, err)
	}
	st := teststack.Load(t, inv.sessions, id)
	teststack.Post(t, inv.sessions, id, st, "And tomorrow?")
	capped := spendAgent(t, turn.Spend{Session: reducer.Caps{InputTokens: st.Usage.InputTokens}}, nil)
	if out, err := fresh(t, capped).runner.Start(ctx, id); err != nil || out.Cause != reducer.CauseLimit || out.Steps != 0 {
		t.Fatalf("second turn: %+v, %v", out, err)
	}
	fs = facts(t, inv, id)
	want = reducer.Limit{Scope: reducer.ScopeSession, Measure: reducer.MeasureInputTokens, Cap: float64(st.Usage.InputTokens), Usage: float64(st.Usage.InputTokens)}
	if last := fs[len(fs)-1]; last.Limit == nil || *last.Limit != want {
		t.Fatalf("the session limit suspension names %+v, want %+v", last.Limit, want)
	}
	// A raise of the turn's cap does not lift the session's: refused.
	before := len(fs)
	err = inv.sessions.Raise(ctx, id, operator, reducer.Raise{Turn: reducer.Caps{InputTokens: 1 << 30}})
	if !errors.Is(err, session.ErrCapNotLifted) || !strings.Contains(err.Error(), "raise session.inputTokens past") {
		t.Fatalf("raise of the wrong cap: %v, want ErrCapNotLifted naming session.inputTokens", err)
	}
	if n := len(facts(t, inv, id)); n != before {
		t.Fatalf("a refused raise wrote %d facts", n-before)
	}
}
