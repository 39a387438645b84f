package factlogtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// Open returns the log under test, reading the time from clk. own asks for
// a log no other test writes to (a case that reads a whole index).
type Open func(t *testing.T, clk clock.Clock, own bool) session.FactLog

// Run runs every case of the contract on logs open returns, in parallel.
func Run(t *testing.T, open Open) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(start)
			c.run(t, open(t, clk.Clock(), c.own), clk)
		})
	}
}

var start = time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)

var cases = []struct {
	name string
	own  bool
	run  func(t *testing.T, l session.FactLog, clk *clock.Fake)
}{
	{"AppendThenRead", false, appendThenRead},
	{"StaleAppendConflicts", false, staleAppendConflicts},
	{"OneOfRacingAppendsWins", false, racingAppends},
	{"TailStopsAtSnapshot", false, tailStopsAtSnapshot},
	{"ReceiptOnceUntilExpiry", false, receiptOnce},
	{"ByOwnerNewestFirst", false, byOwner},
	{"DueInOrder", true, dueInOrder},
	{"BuryPurgeReuse", false, buryPurgeReuse},
	{"SweepFindsIdleAndUnpurged", true, sweep},
	{"RewokeOnceOnTheSameHead", true, rewoke},
}

// sess builds a session's facts: numbered, timed and folded by the
// reducer, as the session store writes them.
type sess struct {
	t     *testing.T
	log   session.FactLog
	id    string
	st    reducer.State
	now   time.Time
	turn  string
	facts []reducer.Fact
}

func newSess(t *testing.T, l session.FactLog, owner string, created time.Time) *sess {
	t.Helper()
	s := &sess{t: t, log: l, id: ids.New("s"), now: created}
	s.append(reducer.Fact{Type: reducer.SessionCreated, Agent: "helper", Owner: owner,
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: owner}})
	return s
}

func (s *sess) prepare(facts ...reducer.Fact) (reducer.State, []reducer.Fact) {
	s.t.Helper()
	out := make([]reducer.Fact, len(facts))
	for i, f := range facts {
		f.Seq = s.st.LastSeq + int64(i) + 1
		if f.Time.IsZero() {
			f.Time = s.now.Add(time.Duration(i) * time.Second)
		}
		if f.Actor.Kind == "" {
			f.Actor = reducer.Actor{Kind: reducer.ActorAgent, ID: f.Turn}
		}
		out[i] = f
	}
	next, err := s.st.Apply(out...)
	if err != nil {
		s.t.Fatalf("reduce: %v", err)
	}
	return next, out
}

func (s *sess) commit(next reducer.State, out []reducer.Fact) {
	s.st, s.facts = next, append(s.facts, out...)
	s.now = s.now.Add(time.Duration(len(out)) * time.Second)
}

func (s *sess) append(facts ...reducer.Fact) {
	s.t.Helper()
	next, out := s.prepare(facts...)
	if err := s.log.Append(s.t.Context(), s.id, next, out...); err != nil {
		s.t.Fatalf("append to %s: %v", s.id, err)
	}
	s.commit(next, out)
}

func message(text string) reducer.Fact {
	return reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "op"},
		Message: &reducer.Message{ID: ids.New("m"), Text: text}}
}

func (s *sess) start() {
	s.t.Helper()
	s.turn = ids.New("t")
	s.append(reducer.Fact{Type: reducer.TurnStarted, Turn: s.turn, Stream: s.turn + "-stream", Lease: s.now.Add(15 * time.Minute)})
}

func (s *sess) complete(snapshot string) {
	s.t.Helper()
	s.append(reducer.Fact{Type: reducer.TurnCompleted, Turn: s.turn, Snapshot: snapshot,
		Usage: &reducer.Usage{InputTokens: 100, OutputTokens: 20, Steps: 2}})
}

func seqs(fs []reducer.Fact) []int64 {
	out := make([]int64, len(fs))
	for i, f := range fs {
		out[i] = f.Seq
	}
	return out
}

func span(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func appendThenRead(t *testing.T, l session.FactLog, _ *clock.Fake) {
	ctx := t.Context()
	owner := ids.New("o")
	s := newSess(t, l, owner, start)
	s.append(message("hello"), message("again"))
	got, err := l.Facts(ctx, s.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs(got), span(1, 3)) {
		t.Fatalf("facts: seqs %v, want 1..3", seqs(got))
	}
	if got[1].Message == nil || got[1].Message.Text != "hello" || got[2].Message.Text != "again" || got[0].Owner != owner {
		t.Fatalf("facts read back differ: %+v", got)
	}
	if !got[0].Time.Equal(start) {
		t.Fatalf("fact time %v, want %v", got[0].Time, start)
	}
	// A reader's facts are its own.
	got[1].Message.Text = "changed"
	again, err := l.Facts(ctx, s.id, 1)
	if err != nil || !slices.Equal(seqs(again), []int64{2, 3}) || again[0].Message.Text != "hello" {
		t.Fatalf("facts after 1: %v %v", seqs(again), err)
	}
	if fs, err := l.Facts(ctx, s.id, 3); err != nil || len(fs) != 0 {
		t.Fatalf("facts after the last: %v %v", fs, err)
	}
	if fs, err := l.Facts(ctx, ids.New("s"), 0); err != nil || len(fs) != 0 {
		t.Fatalf("facts of no session: %v %v", fs, err)
	}
	h, err := l.Head(ctx, s.id)
	if err != nil {
		t.Fatal(err)
	}
	if h.Session != s.id || h.LastSeq != 3 || h.Owner != owner || h.Agent != "helper" || h.Status != reducer.Idle ||
		!h.Created.Equal(start) || h.Created.Location() != time.UTC || !h.Updated.Equal(s.st.Updated) || h.Turn != "" {
		t.Fatalf("head %+v", h)
	}
	// Idle with messages waiting: due since its last update.
	if h.Why != reducer.ReasonInbox || !h.Due.Equal(s.st.Updated.Truncate(time.Millisecond)) {
		t.Fatalf("head due %v (%s), want %v (inbox)", h.Due, h.Why, s.st.Updated)
	}
	s.start()
	if h, err = l.Head(ctx, s.id); err != nil || h.Turn != s.turn || h.Status != reducer.Running || h.Why != reducer.ReasonLease {
		t.Fatalf("head with a turn: %+v %v", h, err)
	}
	s.complete("")
	if h, err = l.Head(ctx, s.id); err != nil || h.Turn != "" || h.Usage.InputTokens != 100 || h.Usage.Steps != 2 || !h.Due.IsZero() {
		t.Fatalf("head after the turn: %+v %v", h, err)
	}
	if _, err := l.Head(ctx, ids.New("s")); !errors.Is(err, dynamo.ErrNotFound) {
		t.Fatalf("head of no session: %v", err)
	}
}

func staleAppendConflicts(t *testing.T, l session.FactLog, _ *clock.Fake) {
	ctx := t.Context()
	s := newSess(t, l, ids.New("o"), start)
	s.append(message("one"))
	// Creating it again.
	created := reducer.Fact{Seq: 1, Type: reducer.SessionCreated, Agent: "helper", Owner: "x", Time: start,
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "x"}}
	st, err := reducer.Reduce([]reducer.Fact{created})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, s.id, st, created); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("second create: %v, want a conflict", err)
	}
	// A writer that read seq 1 and appends seq 2, which is taken.
	stale := &sess{t: t, log: l, id: s.id, now: s.now}
	stale.st, _ = reducer.Reduce(s.facts[:1])
	next, out := stale.prepare(message("stale"))
	if err := l.Append(ctx, s.id, next, out...); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("stale append: %v, want a conflict", err)
	}
	// A gap: seq 4 when the last is 2.
	gap := *s
	gap.st.LastSeq++
	next, out = gap.prepare(message("gap"))
	if err := l.Append(ctx, s.id, next, out...); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("append over a gap: %v, want a conflict", err)
	}
	// Appending to a session that does not exist.
	if err := l.Append(ctx, ids.New("s"), next, out...); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("append to no session: %v, want a conflict", err)
	}
	// Refused before writing: not a conflict.
	bad := out[0]
	bad.Seq = 3
	if err := l.Append(ctx, s.id, reducer.State{LastSeq: 9, Status: reducer.Idle}, bad); err == nil || errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("append with a state of another seq: %v", err)
	}
	fs, err := l.Facts(ctx, s.id, 0)
	if err != nil || !slices.Equal(seqs(fs), []int64{1, 2}) || fs[1].Message.Text != "one" {
		t.Fatalf("after refused appends: %v %v", seqs(fs), err)
	}
	if h, err := l.Head(ctx, s.id); err != nil || h.LastSeq != 2 {
		t.Fatalf("head after refused appends: %+v %v", h, err)
	}
}

func racingAppends(t *testing.T, l session.FactLog, _ *clock.Fake) {
	s := newSess(t, l, ids.New("o"), start)
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		next, out := s.prepare(message(fmt.Sprintf("racer %d", i)))
		wg.Go(func() { errs[i] = l.Append(t.Context(), s.id, next, out...) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("racers %d and %d both won", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, dynamo.ErrConflict):
			t.Fatalf("racer %d: %v, want a conflict", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no racer won")
	}
	fs, err := l.Facts(t.Context(), s.id, 0)
	if err != nil || len(fs) != 2 || fs[1].Message.Text != fmt.Sprintf("racer %d", won) {
		t.Fatalf("facts after the race: %v %v", fs, err)
	}
}

func tailStopsAtSnapshot(t *testing.T, l session.FactLog, _ *clock.Fake) {
	ctx := t.Context()
	s := newSess(t, l, ids.New("o"), start)
	s.append(message("q"))
	if fs, err := l.Tail(ctx, s.id); err != nil || !slices.Equal(seqs(fs), span(1, 2)) {
		t.Fatalf("tail without a snapshot: %v %v", seqs(fs), err)
	}
	s.start()
	s.complete("snap/one") // seq 4
	for i := range 30 {    // more than one page of DynamoDB's reads
		s.append(message(fmt.Sprintf("m%d", i)))
	}
	fs, err := l.Tail(ctx, s.id)
	if err != nil || !slices.Equal(seqs(fs), span(4, 34)) || fs[0].Snapshot != "snap/one" {
		t.Fatalf("tail: %v %v", seqs(fs), err)
	}
	if fs, err := l.Tail(ctx, ids.New("s")); err != nil || len(fs) != 0 {
		t.Fatalf("tail of no session: %v %v", fs, err)
	}
}

func receiptOnce(t *testing.T, l session.FactLog, clk *clock.Fake) {
	ctx := t.Context()
	key := ids.New("k")
	rc := &dynamo.Receipt{Key: key, Request: "h1", Answer: []byte(`{"ok":1}`), Expires: start.Add(time.Hour)}
	s := newSess(t, l, ids.New("o"), start)
	next, out := s.prepare(message("with a receipt"))
	if err := l.AppendWithReceipt(ctx, s.id, next, rc, out...); err != nil {
		t.Fatal(err)
	}
	s.commit(next, out)
	got, ok, err := l.Receipt(ctx, key)
	if err != nil || !ok || got.Request != "h1" || string(got.Answer) != `{"ok":1}` || !got.Expires.Equal(rc.Expires) {
		t.Fatalf("receipt: %+v %v %v", got, ok, err)
	}
	// The key again, on another session's write: refused whole.
	o := newSess(t, l, ids.New("o"), start)
	next, out = o.prepare(message("retry"))
	if err := l.AppendWithReceipt(ctx, o.id, next, &dynamo.Receipt{Key: key, Request: "h2", Answer: []byte("x"), Expires: start.Add(time.Hour)}, out...); !errors.Is(err, dynamo.ErrReceiptTaken) {
		t.Fatalf("a taken receipt key: %v", err)
	}
	if fs, _ := l.Facts(ctx, o.id, 0); len(fs) != 1 {
		t.Fatalf("a refused receipt wrote %d facts", len(fs))
	}
	if got, _, _ := l.Receipt(ctx, key); got.Request != "h1" {
		t.Fatalf("a refused receipt replaced the first: %+v", got)
	}
	if _, ok, err := l.Receipt(ctx, ids.New("k")); ok || err != nil {
		t.Fatalf("receipt of an unused key: %v %v", ok, err)
	}
	// Expired, it counts no more and the key may be used again.
	clk.Advance(time.Hour)
	if _, ok, err := l.Receipt(ctx, key); ok || err != nil {
		t.Fatalf("expired receipt: %v %v", ok, err)
	}
	if err := l.AppendWithReceipt(ctx, o.id, next, &dynamo.Receipt{Key: key, Request: "h3", Answer: []byte("y"), Expires: start.Add(2 * time.Hour)}, out...); err != nil {
		t.Fatalf("reuse of an expired key: %v", err)
	}
	if got, ok, _ := l.Receipt(ctx, key); !ok || got.Request != "h3" {
		t.Fatalf("receipt after reuse: %+v %v", got, ok)
	}
}

func byOwner(t *testing.T, l session.FactLog, _ *clock.Fake) {
	ctx := t.Context()
	owner := ids.New("o")
	var want []string // newest first
	for i := range 5 {
		s := newSess(t, l, owner, start.Add(time.Duration(i)*time.Minute))
		want = append([]string{s.id}, want...)
	}
	newSess(t, l, ids.New("other"), start.Add(time.Hour))
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("listing does not end")
		}
		hs, next, err := l.ByOwner(ctx, owner, 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) > 2 {
			t.Fatalf("page of %d, limit 2", len(hs))
		}
		for _, h := range hs {
			if h.Owner != owner {
				t.Fatalf("listed %s of owner %s", h.Session, h.Owner)
			}
			got = append(got, h.Session)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("by owner: %v, want newest first %v", got, want)
	}
	_, c, err := l.ByOwner(ctx, owner, 1, "")
	if err != nil || c == "" {
		t.Fatalf("first page of 1: cursor %q %v", c, err)
	}
	if _, _, err := l.ByOwner(ctx, ids.New("o"), 1, c); !errors.Is(err, dynamo.ErrBadCursor) {
		t.Fatalf("another owner's cursor: %v", err)
	}
	if _, _, err := l.ByOwner(ctx, owner, 1, "not a cursor"); !errors.Is(err, dynamo.ErrBadCursor) {
		t.Fatalf("a bad cursor: %v", err)
	}
	if _, _, err := l.ByOwner(ctx, "", 1, ""); err == nil {
		t.Fatal("listing no owner")
	}
}

// due collects the sessions of ids that Due passes for each shard by
// before, in the order it passes them.
func due(t *testing.T, l session.FactLog, before time.Time, limit int32, mine map[string]bool) []dynamo.Head {
	t.Helper()
	var out []dynamo.Head
	for shard := range dynamo.DueShards {
		if _, err := l.Due(t.Context(), shard, before, limit, func(h dynamo.Head) error {
			if dynamo.DueShardOf(h.Session) != shard {
				t.Errorf("shard %d passed %s of shard %d", shard, h.Session, dynamo.DueShardOf(h.Session))
			}
			if mine[h.Session] && !slices.ContainsFunc(out, func(o dynamo.Head) bool { return o.Session == h.Session }) {
				out = append(out, h)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortStableFunc(out, func(a, b dynamo.Head) int { return a.Due.Compare(b.Due) })
	return out
}

func dueInOrder(t *testing.T, l session.FactLog, _ *clock.Fake) {
	mine := map[string]bool{}
	var ss []*sess
	for i := range 6 {
		s := newSess(t, l, ids.New("o"), start.Add(time.Duration(i)*time.Minute))
		mine[s.id] = true
		ss = append(ss, s)
	}
	// Idle with a message waiting: due from its last update.
	for _, i := range []int{4, 1, 3} {
		ss[i].append(message("waiting"))
	}
	ss[5].append(message("running"))
	ss[5].start() // due at its lease, 15 minutes on (20 past start)
	got := due(t, l, start.Add(10*time.Minute), 2, mine)
	var order []string
	for _, h := range got {
		order = append(order, h.Session)
	}
	want := []string{ss[1].id, ss[3].id, ss[4].id}
	if !slices.Equal(order, want) {
		t.Fatalf("due by 10 minutes on: %v, want %v (sessions 1, 3, 4)", order, want)
	}
	for _, h := range got {
		if h.Why != reducer.ReasonInbox {
			t.Fatalf("due %s for %s, want inbox", h.Session, h.Why)
		}
	}
	if got := due(t, l, start.Add(2*time.Hour), 0, mine); len(got) != 4 || got[3].Session != ss[5].id || got[3].Why != reducer.ReasonLease {
		t.Fatalf("due two hours on: %+v, want the running session last, for its lease", got)
	}
	if got := due(t, l, start.Add(-time.Hour), 0, mine); len(got) != 0 {
		t.Fatalf("due before any: %+v", got)
	}
	if _, err := l.Due(t.Context(), dynamo.DueShards, start, 0, func(dynamo.Head) error { return nil }); err == nil {
		t.Fatal("Due of a shard out of range")
	}
	stop := errors.New("stop")
	shard := dynamo.DueShardOf(ss[1].id)
	if _, err := l.Due(t.Context(), shard, start.Add(time.Hour), 0, func(dynamo.Head) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("Due passes fn's error back: %v", err)
	}
}

func buryPurgeReuse(t *testing.T, l session.FactLog, _ *clock.Fake) {
	ctx := t.Context()
	owner := ids.New("o")
	s := newSess(t, l, owner, start)
	key := ids.New("k")
	next, out := s.prepare(message("with a receipt"))
	if err := l.AppendWithReceipt(ctx, s.id, next, &dynamo.Receipt{Key: key, Request: "h", Answer: []byte("a"), Expires: start.Add(time.Hour)}, out...); err != nil {
		t.Fatal(err)
	}
	s.commit(next, out)
	s.start()
	h, err := l.Head(ctx, s.id)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bury(ctx, h, "op", start); !errors.Is(err, dynamo.ErrTurnOpen) {
		t.Fatalf("bury with an open turn: %v", err)
	}
	stale := h
	s.complete("")
	stale.Turn = ""
	if err := l.Bury(ctx, stale, "op", start); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("bury of a stale head: %v", err)
	}
	if h, err = l.Head(ctx, s.id); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Purge(ctx, s.id); err == nil {
		t.Fatal("purge of a session with a head")
	}
	if _, err := l.Tombstone(ctx, s.id); !errors.Is(err, dynamo.ErrNotFound) {
		t.Fatalf("tombstone of a live session: %v", err)
	}
	at := start.Add(time.Minute)
	if err := l.Bury(ctx, h, "op", at); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Head(ctx, s.id); !errors.Is(err, dynamo.ErrNotFound) {
		t.Fatalf("head of a buried session: %v", err)
	}
	tomb, err := l.Tombstone(ctx, s.id)
	if err != nil || tomb.Owner != owner || tomb.By != "op" || !tomb.At.Equal(at) || tomb.Purged {
		t.Fatalf("tombstone %+v %v", tomb, err)
	}
	if hs, _, err := l.ByOwner(ctx, owner, 0, ""); err != nil || len(hs) != 0 {
		t.Fatalf("a buried session is listed: %+v %v", hs, err)
	}
	// The id is not free until the purge is done.
	re := &sess{t: t, log: l, id: s.id, now: start}
	next, out = re.prepare(reducer.Fact{Type: reducer.SessionCreated, Agent: "helper", Owner: owner,
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: owner}})
	if err := l.Append(ctx, s.id, next, out...); !errors.Is(err, dynamo.ErrDeleting) {
		t.Fatalf("create while the delete is unfinished: %v", err)
	}
	// Deferred: due, for the purge, at until.
	until := start.Add(30 * time.Minute)
	if err := l.DeferPurge(ctx, s.id, until, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if err := l.DeferPurge(ctx, s.id, until, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	tomb, err = l.Tombstone(ctx, s.id)
	if slices.Sort(tomb.Fenced); err != nil || !tomb.Fence.Equal(until) || !slices.Equal(tomb.Fenced, []string{"a", "b"}) {
		t.Fatalf("deferred tombstone %+v %v", tomb, err)
	}
	mine := map[string]bool{s.id: true}
	if got := due(t, l, until, 0, mine); len(got) != 1 || got[0].Why != dynamo.WhyPurge || !got[0].Due.Equal(until) {
		t.Fatalf("due for the purge: %+v", got)
	}
	if got := due(t, l, until.Add(-time.Millisecond), 0, mine); len(got) != 0 {
		t.Fatalf("due before the fence: %+v", got)
	}
	n, err := l.Purge(ctx, s.id)
	if err != nil || n < len(s.facts) {
		t.Fatalf("purge deleted %d items (%v), want at least the %d facts", n, err, len(s.facts))
	}
	if fs, err := l.Facts(ctx, s.id, 0); err != nil || len(fs) != 0 {
		t.Fatalf("facts after the purge: %v %v", seqs(fs), err)
	}
	if _, ok, _ := l.Receipt(ctx, key); ok {
		t.Fatal("the receipt outlived the purge")
	}
	if err := l.MarkPurged(ctx, s.id, start.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := due(t, l, until.Add(time.Hour), 0, mine); len(got) != 0 {
		t.Fatalf("due after the purge: %+v", got)
	}
	if tomb, err = l.Tombstone(ctx, s.id); err != nil || !tomb.Purged {
		t.Fatalf("tombstone after the purge: %+v %v", tomb, err)
	}
	if err := l.DeferPurge(ctx, s.id, until, nil); err == nil {
		t.Fatal("deferring the purge of a purged session")
	}
	if err := l.MarkPurged(ctx, ids.New("s"), start); err == nil {
		t.Fatal("marking a session without a tombstone purged")
	}
	// Purged, the id is free again.
	if err := l.Append(ctx, s.id, next, out...); err != nil {
		t.Fatalf("create after the purge: %v", err)
	}
	if h, err := l.Head(ctx, s.id); err != nil || h.LastSeq != 1 {
		t.Fatalf("head of the new session: %+v %v", h, err)
	}
}

func sweep(t *testing.T, l session.FactLog, _ *clock.Fake) {
	ctx := t.Context()
	old := newSess(t, l, ids.New("o"), start)
	newSess(t, l, ids.New("o"), start.Add(time.Hour)) // updated after the cut-off
	busy := newSess(t, l, ids.New("o"), start)
	busy.append(message("q"))
	busy.start()
	gone := newSess(t, l, ids.New("o"), start)
	h, err := l.Head(ctx, gone.id)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bury(ctx, h, "op", start); err != nil {
		t.Fatal(err)
	}
	var expired, unpurged []string
	collect := func(ctx time.Time) error {
		expired, unpurged = nil, nil
		return l.Sweep(t.Context(), ctx,
			func(h dynamo.Head) error { expired = append(expired, h.Session); return nil },
			func(tb dynamo.Tombstone) error { unpurged = append(unpurged, tb.Session); return nil })
	}
	if err := collect(start.Add(30 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(expired, []string{old.id}) || !slices.Equal(unpurged, []string{gone.id}) {
		t.Fatalf("sweep: expired %v (want %s), unpurged %v (want %s)", expired, old.id, unpurged, gone.id)
	}
	if err := collect(time.Time{}); err != nil || len(expired) != 0 || !slices.Equal(unpurged, []string{gone.id}) {
		t.Fatalf("sweep without a cut-off: expired %v, unpurged %v, %v", expired, unpurged, err)
	}
	stop := errors.New("stop")
	if err := l.Sweep(ctx, start.Add(30*time.Minute), func(dynamo.Head) error { return stop },
		func(dynamo.Tombstone) error { return nil }); !errors.Is(err, stop) {
		t.Fatalf("sweep passes the callback's error back: %v", err)
	}
}

// rewoke records a re-sent wake on a head: once on the head it was read
// as, moving the head in the due index, and never on a head that moved on.
func rewoke(t *testing.T, l session.FactLog, _ *clock.Fake) {
	ctx := t.Context()
	s := newSess(t, l, ids.New("o"), start)
	s.append(message("waiting"))
	mine := map[string]bool{s.id: true}
	h, err := l.Head(ctx, s.id)
	if err != nil || h.Why != reducer.ReasonInbox || !h.Rewoken.IsZero() {
		t.Fatalf("head = %+v, %v", h, err)
	}
	at := h.Due.Add(3 * time.Minute)
	next := at.Add(2 * time.Minute)
	if err := l.Rewoke(ctx, h, at, next); err != nil {
		t.Fatal(err)
	}
	// Another run's, a millisecond later, on the head as it read it. (The
	// same call again may be this one's resend after a lost answer, which
	// a log may take as done.)
	if err := l.Rewoke(ctx, h, at.Add(time.Millisecond), next.Add(time.Millisecond)); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("a second record on the head as first read: %v, want a conflict", err)
	}
	got, err := l.Head(ctx, s.id)
	if err != nil || !got.Rewoken.Equal(at) || !got.Due.Equal(next) || got.Why != h.Why || got.LastSeq != h.LastSeq {
		t.Fatalf("head after the record = %+v, %v; want rewoken %v, due %v", got, err, at, next)
	}
	if d := due(t, l, next.Add(-time.Millisecond), 0, mine); len(d) != 0 {
		t.Fatalf("due before the next re-send: %+v", d)
	}
	if d := due(t, l, next, 0, mine); len(d) != 1 || !d[0].Rewoken.Equal(at) {
		t.Fatalf("due at the next re-send: %+v", d)
	}
	s.append(message("more"))
	if err := l.Rewoke(ctx, got, at, next); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("a record on a head that moved on: %v, want a conflict", err)
	}
	if got, err := l.Head(ctx, s.id); err != nil || !got.Rewoken.IsZero() || got.LastSeq != h.LastSeq+1 {
		t.Fatalf("head after the next append = %+v, %v; want the record gone", got, err)
	}
}
