package reducer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/pkg/reducer"
)

func compacted(b *builder, opts ...opt) reducer.Fact {
	return b.fact(reducer.ContextCompacted, b.agent(), append([]opt{edit(func(f *reducer.Fact) {
		f.Snapshot = "snapshots/s/compacted.json"
		f.Compaction = &reducer.Compaction{Turns: 3, Messages: 9, Kept: 4, Before: 1200, After: 500,
			Usage: reducer.Usage{InputTokens: 800, OutputTokens: 90, CostMicroUSD: 1250}}
	})}, opts...)...)
}

func TestContextCompacted(t *testing.T) {
	b := newBuilder()
	fs := append(b.running(), compacted(b))
	st, err := reducer.Reduce(fs)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != reducer.Running || st.Compactions != 1 || st.Snapshot != "snapshots/s/compacted.json" || st.SnapshotSeq != fs[len(fs)-1].Seq {
		t.Fatalf("after a compaction: %+v", st)
	}
	// The summariser's call counts in the session's usage, not the turn's.
	if st.Usage.InputTokens != 800 || st.Usage.CostMicroUSD != 1250 || st.Turn.Usage != (reducer.Usage{}) {
		t.Fatalf("usage %+v, turn usage %+v", st.Usage, st.Turn.Usage)
	}
	// The turn goes on and ends as usual; the compaction stays counted.
	end, err := st.Apply(b.completed(edit(func(f *reducer.Fact) { f.Usage = &reducer.Usage{InputTokens: 10, Steps: 1} })))
	if err != nil || end.Compactions != 1 || end.Usage.InputTokens != 810 {
		t.Fatalf("after the turn ends: %v, %+v", err, end)
	}
}

func TestContextCompactedIllegal(t *testing.T) {
	for _, c := range []struct {
		name   string
		prefix func(*builder) []reducer.Fact
		fact   func(*builder) reducer.Fact
		reason string
	}{
		{"while idle", (*builder).idle, func(b *builder) reducer.Fact { return compacted(b) }, "no open turn"},
		{"while suspended", func(b *builder) []reducer.Fact { return b.suspendedFor(reducer.CauseBudget) },
			func(b *builder) reducer.Fact { return compacted(b) }, "only a running turn compacts"},
		{"without a snapshot", (*builder).running, func(b *builder) reducer.Fact {
			return compacted(b, edit(func(f *reducer.Fact) { f.Snapshot = "" }))
		}, "no compacted snapshot"},
		{"replacing nothing", (*builder).running, func(b *builder) reducer.Fact {
			return compacted(b, edit(func(f *reducer.Fact) { f.Compaction.Messages = 0 }))
		}, "replaces 0 messages"},
		{"for another turn", (*builder).running, func(b *builder) reducer.Fact {
			return compacted(b, edit(func(f *reducer.Fact) { f.Turn = "t-other" }))
		}, "is not the open turn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder()
			st, err := reducer.Reduce(c.prefix(b))
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Apply(c.fact(b))
			if !errors.Is(err, reducer.ErrIllegal) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("got %v, want an illegal transition saying %q", err, c.reason)
			}
		})
	}
}
