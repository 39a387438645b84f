package reducer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

func (b *builder) raised(r reducer.Raise, opts ...opt) reducer.Fact {
	return b.fact(reducer.LimitsRaised, operator, append([]opt{edit(func(f *reducer.Fact) {
		f.Raise = &r
	})}, opts...)...)
}

// A turn suspended for a limit waits for an operator; a raise records the
// caps and lets it resume; the next suspension needs a raise again.
func TestLimitSuspensionWaitsForARaise(t *testing.T) {
	b := newBuilder()
	facts := []reducer.Fact{b.created(), b.message("m1"), b.started("t1"),
		b.suspended(reducer.CauseLimit, usage(100, 10, 2))}
	st, err := reducer.Reduce(facts)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Next(b.now.Add(time.Hour), time.Minute); n.Reason != reducer.ReasonOperator || n.Action != reducer.None || !n.Due.IsZero() {
		t.Fatalf("suspended for limit: need %+v, want operator, none, no due time", n)
	}
	if st.Usage.InputTokens != 100 || st.Turn.Usage.Steps != 2 {
		t.Fatalf("usage %+v, turn usage %+v", st.Usage, st.Turn.Usage)
	}
	raise := b.raised(reducer.Raise{Turn: reducer.Caps{InputTokens: 500}, Session: reducer.Caps{Cost: 2}})
	st, err = st.Apply(raise)
	if err != nil {
		t.Fatal(err)
	}
	if st.Turn.Caps.InputTokens != 500 || st.Caps.Cost != 2 || !st.Turn.Raised {
		t.Fatalf("after raise: turn caps %+v, session caps %+v, raised %v", st.Turn.Caps, st.Caps, st.Turn.Raised)
	}
	if n := st.Next(b.now, 0); n.Action != reducer.Resume || n.Reason != reducer.ReasonWake {
		t.Fatalf("after raise: need %+v, want resume", n)
	}
	// A second raise keeps the fields it does not name.
	st, err = st.Apply(b.raised(reducer.Raise{Turn: reducer.Caps{OutputTokens: 50}}))
	if err != nil {
		t.Fatal(err)
	}
	if (st.Turn.Caps != reducer.Caps{InputTokens: 500, OutputTokens: 50}) {
		t.Fatalf("turn caps %+v", st.Turn.Caps)
	}
	st, err = st.Apply(b.resumed(), b.suspended(reducer.CauseLimit, usage(600, 10, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if st.Turn.Raised || st.Next(b.now, 0).Reason != reducer.ReasonOperator {
		t.Fatalf("suspended again: raised %v, need %+v", st.Turn.Raised, st.Next(b.now, 0))
	}
	// The session's caps outlive the turn; the turn's do not.
	st, err = st.Apply(b.cancelled())
	if err != nil {
		t.Fatal(err)
	}
	if st.Caps.Cost != 2 || st.Turn != nil {
		t.Fatalf("after cancel: caps %+v, turn %+v", st.Caps, st.Turn)
	}
}

func TestLimitsRaisedIllegal(t *testing.T) {
	cases := map[string]func(b *builder) []reducer.Fact{
		"idle": func(b *builder) []reducer.Fact {
			return []reducer.Fact{b.created(), b.raised(reducer.Raise{Turn: reducer.Caps{InputTokens: 1}})}
		},
		"running": func(b *builder) []reducer.Fact {
			return []reducer.Fact{b.created(), b.message("m1"), b.started("t1"),
				b.raised(reducer.Raise{Turn: reducer.Caps{InputTokens: 1}})}
		},
		"suspended for the budget": func(b *builder) []reducer.Fact {
			return []reducer.Fact{b.created(), b.message("m1"), b.started("t1"), b.suspended(reducer.CauseBudget),
				b.raised(reducer.Raise{Turn: reducer.Caps{InputTokens: 1}})}
		},
		"no caps": func(b *builder) []reducer.Fact {
			return []reducer.Fact{b.created(), b.message("m1"), b.started("t1"), b.suspended(reducer.CauseLimit),
				b.fact(reducer.LimitsRaised, operator)}
		},
		"another turn": func(b *builder) []reducer.Fact {
			return []reducer.Fact{b.created(), b.message("m1"), b.started("t1"), b.suspended(reducer.CauseLimit),
				b.raised(reducer.Raise{Turn: reducer.Caps{InputTokens: 1}}, turnID("t0"))}
		},
		"limit suspension with a fault count": func(b *builder) []reducer.Fact {
			return []reducer.Fact{b.created(), b.message("m1"), b.started("t1"),
				b.suspended(reducer.CauseLimit, fault(1, t0.Add(time.Hour)))}
		},
	}
	for name, facts := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := reducer.Reduce(facts(newBuilder())); !errors.Is(err, reducer.ErrIllegal) {
				t.Fatalf("err = %v, want ErrIllegal", err)
			}
		})
	}
}

func TestCauseLimitKnown(t *testing.T) {
	if !reducer.CauseLimit.Known() || reducer.CauseLimit.Fault() {
		t.Fatal("limit must be a known cause and not a fault")
	}
	// Every cause a suspension may carry is known (the head check relies on it).
	for _, c := range []reducer.Cause{reducer.CauseBudget, reducer.CauseApproval, reducer.CauseThrottled,
		reducer.CauseUncertain, reducer.CauseLease, reducer.CauseModelUnavailable, reducer.CauseToolsUnavailable, reducer.CauseLimit} {
		if !c.Known() {
			t.Errorf("cause %q is not Known", c)
		}
	}
	if reducer.Cause("bogus").Known() {
		t.Error("an unknown cause is Known")
	}
}

func TestCapsReachedAndPrice(t *testing.T) {
	p := reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}
	if got := p.Cost(1000, 100); got != 4500 {
		t.Fatalf("cost of 1000 in, 100 out = %d micro-USD, want 4500", got)
	}
	if got := (reducer.Price{InputPerMTok: 0.25}).Cost(3, 0); got != 1 { // 0.75 rounds to 1
		t.Fatalf("rounded cost = %d, want 1", got)
	}
	c := reducer.Caps{InputTokens: 100, OutputTokens: 20, Cost: 0.01}
	for _, tc := range []struct {
		u    reducer.Usage
		want bool
	}{
		{reducer.Usage{InputTokens: 99, OutputTokens: 19, CostMicroUSD: 9999}, false},
		{reducer.Usage{InputTokens: 100}, true},
		{reducer.Usage{OutputTokens: 20}, true},
		{reducer.Usage{CostMicroUSD: 10000}, true},
	} {
		if got := c.Reached(tc.u) != ""; got != tc.want {
			t.Errorf("Reached(%+v) = %v, want %v", tc.u, got, tc.want)
		}
	}
	if (reducer.Caps{}).Reached(reducer.Usage{InputTokens: 1 << 40}) != "" {
		t.Error("zero caps must not limit")
	}
}
