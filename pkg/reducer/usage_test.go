package reducer_test

import (
	"errors"
	"testing"

	"github.com/baton-run/baton/pkg/reducer"
)

// A suspension's usage is the turn's so far: the session counts it at once,
// and the turn's end (or cancellation) counts each step once.
func TestSuspensionUsageCountsInTheSession(t *testing.T) {
	b := newBuilder()
	fs := []reducer.Fact{b.created(), b.message("m1"), b.started("turn_1"), b.completed(usage(100, 10, 1)),
		b.message("m2"), b.started("turn_2")}
	check := func(want reducer.Usage, fs []reducer.Fact) {
		t.Helper()
		st, err := reducer.Reduce(fs)
		if err != nil {
			t.Fatal(err)
		}
		if st.Usage != want {
			t.Fatalf("usage = %+v, want %+v", st.Usage, want)
		}
	}
	check(reducer.Usage{InputTokens: 100, OutputTokens: 10, Steps: 1}, fs)
	fs = append(fs, b.suspended(reducer.CauseBudget, usage(20, 2, 2)))
	check(reducer.Usage{InputTokens: 120, OutputTokens: 12, Steps: 3}, fs)
	fs = append(fs, b.resumed(), b.suspended(reducer.CauseBudget, usage(50, 5, 4)))
	check(reducer.Usage{InputTokens: 150, OutputTokens: 15, Steps: 5}, fs)
	// A suspension without usage (a store fault's) changes nothing.
	fs = append(fs, b.resumed(), b.suspended(reducer.CauseThrottled))
	check(reducer.Usage{InputTokens: 150, OutputTokens: 15, Steps: 5}, fs)
	ended := append(fs, b.resumed(), b.completed(usage(70, 7, 5)))
	check(reducer.Usage{InputTokens: 170, OutputTokens: 17, Steps: 6}, ended)
	// A cancelled turn's usage is what its suspensions recorded.
	check(reducer.Usage{InputTokens: 150, OutputTokens: 15, Steps: 5}, append(fs[:len(fs):len(fs)], b.cancelled(seq(fs[len(fs)-1].Seq+1))))
}

// A fact with a negative count of usage is refused: usage only grows.
func TestNegativeUsageIsIllegal(t *testing.T) {
	b := newBuilder()
	fs := []reducer.Fact{b.created(), b.message("m1"), b.started("turn_1"), b.suspended(reducer.CauseBudget, usage(-1, 0, 1))}
	if _, err := reducer.Reduce(fs); !errors.Is(err, reducer.ErrIllegal) {
		t.Fatalf("a suspension with negative usage: %v, want ErrIllegal", err)
	}
}

// usage.recorded counts an ended turn's unwritten billed steps in the
// session's usage; it is refused for the open turn or without usage.
func TestUsageRecordedAfterTheTurnEnded(t *testing.T) {
	b := newBuilder()
	fs := []reducer.Fact{b.created(), b.message("m1"), b.started("turn_1")}
	n := b.seq
	rec := func(opts ...opt) reducer.Fact {
		b.seq = n
		return b.fact(reducer.UsageRecorded, b.agent(), opts...)
	}
	if _, err := reducer.Reduce(append(fs, rec(usage(5, 1, 1)))); !errors.Is(err, reducer.ErrIllegal) {
		t.Fatalf("usage.recorded for the open turn: %v, want ErrIllegal", err)
	}
	fs = append(fs, b.cancelled(seq(n+1)))
	n++
	if _, err := reducer.Reduce(append(fs, rec())); !errors.Is(err, reducer.ErrIllegal) {
		t.Fatalf("usage.recorded without usage: %v, want ErrIllegal", err)
	}
	st, err := reducer.Reduce(append(fs, rec(usage(5, 1, 1))))
	if err != nil || st.Usage != (reducer.Usage{InputTokens: 5, OutputTokens: 1, Steps: 1}) {
		t.Fatalf("after usage.recorded: %+v, %v", st.Usage, err)
	}
}
