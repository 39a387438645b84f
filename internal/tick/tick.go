package tick

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/metrics"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// Defaults for the Tick's zero fields.
const (
	DefaultGrace       = 2 * time.Minute
	DefaultConcurrency = 64
	DefaultMargin      = 5 * time.Second
	DefaultPageSize    = 100
	// DefaultShardConcurrency bounds the byDue shards read at once: all
	// of them.
	DefaultShardConcurrency = dynamo.DueShards
)

// actor is who the tick's facts name.
func actor() reducer.Actor { return reducer.Actor{Kind: reducer.ActorSystem, ID: "tick"} }

// Tick sweeps the sessions that need attention. Its fields are set once; a
// Tick is safe for concurrent use and keeps nothing between runs.
type Tick struct {
	// Sessions loads and commits sessions, and reads the due index
	// (Sessions.Due). Its Waker, when set, sends the wake after an expiry
	// leaves nothing pending (Waker does otherwise).
	Sessions *session.Store
	// Waker sends the tick's wakes; nil means Sessions.Waker.
	Waker wake.Waker
	// Grace is how long a session that waits for a wake may go without
	// one resuming it before the wake is taken as lost; 0 means 2 minutes.
	Grace time.Duration
	// Concurrency bounds the sessions looked at once; 0 means 64.
	Concurrency int
	// Senders bounds the batches of wakes sent at once, when the waker
	// sends batches (wake.Batcher: SendMessageBatch, wake.MaxBatch wakes
	// a request); 0 means 8.
	Senders int
	// Margin is how long before the context's deadline the run stops
	// taking sessions; 0 means 5 seconds. It never exceeds a quarter of
	// the time left when the run starts, so a short deadline still leaves
	// the run most of its time.
	Margin time.Duration
	// PageSize is the number of heads read per index page; 0 means 100.
	PageSize int32
	// ShardConcurrency bounds the byDue index's shards (dynamo.DueShards)
	// read at once; 0 means all of them. Visits still run Concurrency at
	// a time.
	ShardConcurrency int
	// Now is the clock deciding what is due; nil means Sessions' clock.
	Now clock.Clock
	// Log receives what the tick does not return; nil discards it.
	Log *slog.Logger
	// Metrics records each run's report (reaps, expiries, re-sent wakes,
	// errors); nil records nothing.
	Metrics *metrics.Recorder
}

// Report counts what one run did.
type Report struct {
	// Seen counts the due heads looked at.
	Seen int
	// Reaped counts turns suspended after their lease ran out.
	Reaped int
	// Expired counts approvals denied as expired.
	Expired int
	// Rewoken counts wakes re-sent.
	Rewoken int
	// Posted counts schedule occurrences posted as messages.
	Posted int
	// Purged counts deletes finished whose purge waited for the lease of
	// an invocation a cancel ended (dynamo.WhyPurge).
	Purged int
	// Pages counts index pages read.
	Pages int
	// Errors counts sessions the run failed to handle; the next run tries
	// them again.
	Errors int
	// Stopped is set when the run hit its own deadline before the end of
	// the due sessions.
	Stopped bool
}

func (t *Tick) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC()
	}
	return t.Sessions.Clock()
}

func (t *Tick) log() *slog.Logger {
	if t.Log != nil {
		return t.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (t *Tick) waker() wake.Waker {
	if t.Waker != nil {
		return t.Waker
	}
	return t.Sessions.Waker
}

// margin is how long before its deadline a run with left to go stops
// taking sessions: m, or a quarter of left when that is shorter.
func margin(m, left time.Duration) time.Duration {
	return min(m, left/4)
}

func orDefault[T int | int32 | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// HandleScheduled is the tick function's Lambda handler for its EventBridge
// schedule. The event says only that it is time; Run does the rest.
func (t *Tick) HandleScheduled(ctx context.Context, ev events.EventBridgeEvent) (Report, error) {
	rep, err := t.Run(ctx)
	log := t.log().With("event", ev.ID, "scheduled", ev.Time, "seen", rep.Seen, "reaped", rep.Reaped,
		"expired", rep.Expired, "rewoken", rep.Rewoken, "posted", rep.Posted, "purged", rep.Purged, "pages", rep.Pages, "errors", rep.Errors, "stopped", rep.Stopped)
	if err != nil {
		log.ErrorContext(ctx, "tick failed", "err", err)
		return rep, err
	}
	log.InfoContext(ctx, "tick done")
	return rep, nil
}

// counts is a Report under construction by concurrent visits.
type counts struct {
	mu  sync.Mutex
	rep Report
}

func (c *counts) add(f func(*Report)) {
	c.mu.Lock()
	f(&c.rep)
	c.mu.Unlock()
}

// Run looks at every session due now, through the byDue index (queries of
// each of its shards, never a scan), Concurrency at a time. For each it does what
// reducer.State.Next decides from the session's facts (reloaded, since the
// index may be stale) or, for a session waiting for a wake, from its head
// read consistently:
//
//   - Reap, running past its lease: the invocation died. Record
//     turn.suspended{lease} and send a wake; the worker resumes from the
//     last checkpoint.
//   - Expire, an approval request past its expiry: deny it as "expired".
//   - Post, a schedule's occurrence is due: post its message, with an ID
//     of the occurrence, in one write with schedule.fired, and wake it.
//   - Rewake, waiting for a wake (suspended with nothing pending, or idle
//     with messages) for longer than Grace past when it was due, or for
//     Grace since the tick last re-sent it: the wake was lost; record the
//     re-send on the head, then send it again (once per Grace however
//     many runs; see rewake).
//
// A session someone else changed meanwhile is left to them. Run stops
// taking sessions Margin before the context's deadline and reports Stopped;
// the next run carries on. It returns an error only when the index cannot
// be read or the context ends first; a session that fails is logged,
// counted in Errors, and tried again by the next run.
func (t *Tick) Run(ctx context.Context) (Report, error) {
	if t.Sessions == nil {
		return Report{}, errors.New("tick: no session store")
	}
	if t.waker() == nil {
		return Report{}, errors.New("tick: no waker")
	}
	now := t.now()
	var c counts

	// soft ends when the run must stop taking sessions; a visit under way
	// then finishes under ctx, within the margin.
	stopAt := time.Time{}
	if dl, ok := ctx.Deadline(); ok {
		stopAt = dl.Add(-margin(orDefault(t.Margin, DefaultMargin), time.Until(dl)))
		if !time.Now().Before(stopAt) {
			return Report{Stopped: true}, nil
		}
	}
	soft, cancel := context.WithCancel(ctx)
	if !stopAt.IsZero() {
		soft, cancel = context.WithDeadline(ctx, stopAt)
	}
	defer cancel()

	heads := make(chan dynamo.Head)
	var (
		exhausted bool // the pager reached the end of the index
		pageErr   error
	)
	go func() {
		defer close(heads)
		exhausted, pageErr = t.page(soft, now, heads, &c)
	}()

	send := t.newSender(ctx, &c)
	var wg sync.WaitGroup
	var abandoned atomic.Bool // a worker stopped with heads left
	for range orDefault(t.Concurrency, DefaultConcurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range heads {
				if soft.Err() != nil {
					abandoned.Store(true)
					return
				}
				c.add(func(r *Report) { r.Seen++ })
				if err := t.visit(ctx, h, now, &c, send); err != nil {
					c.add(func(r *Report) { r.Errors++ })
					t.log().WarnContext(ctx, "tick: session not handled; the next run tries again", "session", h.Session, "why", h.Why, "err", err)
				}
			}
		}()
	}
	wg.Wait()
	// Workers that stopped early leave the pager to notice soft ending;
	// wait for it to close heads, so its results are in.
	for range heads {
		abandoned.Store(true)
	}
	send.close()

	rep := c.rep
	t.Metrics.Tick(rep.Reaped, rep.Expired, rep.Rewoken, rep.Errors)
	switch {
	case ctx.Err() != nil:
		return rep, fmt.Errorf("tick: %w", ctx.Err())
	case pageErr != nil:
		return rep, fmt.Errorf("tick: %w", pageErr)
	case !exhausted || abandoned.Load():
		rep.Stopped = true
	}
	return rep, nil
}

// page sends every head due by now, each session once, reading the byDue
// index's shards ShardConcurrency at a time, until every shard is read or
// ctx ends. It reports whether it read every shard to its end.
func (t *Tick) page(ctx context.Context, now time.Time, out chan<- dynamo.Head, c *counts) (bool, error) {
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	// send passes h on unless the run has seen its session: a session the
	// run changed may turn up again further on, and a head written before
	// the index was sharded again in its own shard.
	send := func(h dynamo.Head) error {
		mu.Lock()
		dup := seen[h.Session]
		seen[h.Session] = true
		mu.Unlock()
		if dup {
			return nil
		}
		select {
		case out <- h:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	shards := make(chan int, dynamo.DueShards)
	for shard := range dynamo.DueShards {
		shards <- shard
	}
	close(shards)
	errs := make(chan error, dynamo.DueShards)
	var wg sync.WaitGroup
	for range min(orDefault(t.ShardConcurrency, DefaultShardConcurrency), dynamo.DueShards) {
		wg.Go(func() {
			for shard := range shards {
				pages, err := t.Sessions.Due(ctx, shard, now, orDefault(t.PageSize, DefaultPageSize), send)
				c.add(func(r *Report) { r.Pages += pages })
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var err error
	for e := range errs {
		err = errors.Join(err, e)
	}
	switch {
	case ctx.Err() != nil:
		return false, nil // the run is stopping; Run reports it
	case err != nil:
		return false, err
	}
	return true, nil
}

// visit does what one due session needs, as reducer.State.Next decides it.
func (t *Tick) visit(ctx context.Context, h dynamo.Head, now time.Time, c *counts, send *sender) error {
	grace := orDefault(t.Grace, DefaultGrace)
	if h.Why == dynamo.WhyPurge {
		// A deleted session's tombstone: the invocation its purge waited
		// for has stopped (its lease passed).
		if err := t.Sessions.FinishDelete(ctx, h.Session); err != nil {
			return err
		}
		c.add(func(r *Report) { r.Purged++ })
		t.log().InfoContext(ctx, "tick: finished the delete of a session", "session", h.Session)
		return nil
	}
	if h.Why.Wake() {
		// A session waiting for a wake needs only its head: the head is
		// written in the same transaction as every fact, so a consistent
		// read of it says whether the session still waits, at a fraction
		// of a Load; and a stale head from the index only understates Due.
		if !h.Lost(now, grace) {
			return nil // its wake, or the tick's re-send, is recent enough to be in flight
		}
		return t.rewake(ctx, h.Session, now, grace, c, send)
	}
	sess, err := t.Sessions.Load(ctx, h.Session)
	if errors.Is(err, session.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	st := sess.State
	switch n := st.Next(now, grace); n.Action {
	case reducer.Reap:
		return t.reap(ctx, h.Session, st, c, send)
	case reducer.Expire:
		return t.expire(ctx, h.Session, st, now, c)
	case reducer.Post:
		return t.post(ctx, h.Session, st, n.Due, c, send)
	case reducer.Rewake:
		// The index's head was stale: decide from the head itself, which
		// knows whether the wake was re-sent already.
		return t.rewake(ctx, h.Session, now, grace, c, send)
	}
	return nil
}

// rewake re-sends the wake of a session whose head, read consistently, still
// says it waits for one and has for longer than grace, or for a grace since
// the tick last re-sent it (dynamo.Head.Lost). It records the re-send on the
// head first, moving the head's due time a grace on (Sessions.Rewoke), and
// sends only if that conditional write won: any number of runs re-send a
// wake once per grace, not once per run, and a session that moved on is
// not re-sent. A re-send that is lost in turn is re-sent a grace later.
func (t *Tick) rewake(ctx context.Context, id string, now time.Time, grace time.Duration, c *counts, send *sender) error {
	h, err := t.Sessions.Head(ctx, id)
	if errors.Is(err, dynamo.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !h.Lost(now, grace) {
		return nil
	}
	err = t.Sessions.Rewoke(ctx, h, now, now.Add(grace))
	if errors.Is(err, dynamo.ErrConflict) {
		t.log().InfoContext(ctx, "tick: the session moved on, or another run re-sent its wake", "session", id, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	t.log().InfoContext(ctx, "tick: lost wake re-sent", "session", id, "status", h.Status, "cause", h.Cause, "updated", h.Updated, "rewoken", h.Rewoken)
	if err := send.send(ctx, wake.Wake{Session: id, Reason: wake.Rewake, Seq: h.LastSeq}, func() { c.add(func(r *Report) { r.Rewoken++ }) }); err != nil {
		// The re-send is recorded: the run a grace from now sends it.
		return fmt.Errorf("re-send the wake of %s: %w", id, err)
	}
	return nil
}

// reap suspends a turn whose invocation's lease ran out, and wakes it. The
// suspension records the usage of the billed steps the dead invocation
// left in the stream, as the runner's own suspensions do; when the stream
// cannot be read it keeps what the turn last recorded, and the resumed
// run records the rest.
func (t *Tick) reap(ctx context.Context, id string, st reducer.State, c *counts, send *sender) error {
	f := reducer.Fact{Type: reducer.TurnSuspended, Actor: actor(), Turn: st.Turn.ID, Cause: reducer.CauseLease}
	u, ok, err := t.Sessions.StreamUsage(ctx, id, st.Turn.Stream)
	if err != nil {
		t.log().WarnContext(ctx, "tick: read the reaped turn's stream for its usage", "session", id, "err", err)
	}
	if ok {
		f.Usage = &u
	}
	next, err := t.Sessions.Append(ctx, id, st, f)
	if session.LostRace(err) {
		t.log().InfoContext(ctx, "tick: the turn moved on before the reap", "session", id, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reap %s: %w", id, err)
	}
	c.add(func(r *Report) { r.Reaped++ })
	t.log().InfoContext(ctx, "tick: reaped a turn past its lease", "session", id, "turn", st.Turn.ID, "lease", st.Turn.Lease)
	if err := send.send(ctx, wake.Wake{Session: id, Reason: wake.Lease, Seq: next.LastSeq}, nil); err != nil {
		// The suspension is durable: a later run re-sends the wake.
		return fmt.Errorf("wake reaped %s: %w", id, err)
	}
	return nil
}

// expire denies the session's expired approvals. Answer wakes the turn once
// nothing is left pending.
func (t *Tick) expire(ctx context.Context, id string, st reducer.State, now time.Time, c *counts) error {
	pending := st.Turn.Pending
	denied := 0
	for _, p := range pending {
		if p.Expires.IsZero() || !p.Expires.Before(now) {
			continue
		}
		err := t.Sessions.Answer(ctx, id, actor(), reducer.Answer{ApprovalID: p.ID, Decision: reducer.Deny, Reason: "expired"})
		if errors.Is(err, session.ErrNotPending) {
			continue // answered meanwhile
		}
		if err != nil {
			return fmt.Errorf("expire approval %s of %s: %w", p.ID, id, err)
		}
		denied++
		c.add(func(r *Report) { r.Expired++ })
		t.log().InfoContext(ctx, "tick: approval expired and denied", "session", id, "approval", p.ID, "tool", p.Tool, "expires", p.Expires)
	}
	if denied == len(pending) && t.Sessions.Waker == nil {
		// Answer sent no wake; send it here.
		if err := t.waker().Wake(ctx, wake.Wake{Session: id, Reason: wake.Approval}, 0); err != nil {
			return fmt.Errorf("wake %s after expiry: %w", id, err)
		}
	}
	return nil
}

// post posts the message of the schedule occurrence at due and wakes the
// session; the compare-and-set makes it once however many runs try.
func (t *Tick) post(ctx context.Context, id string, st reducer.State, due time.Time, c *counts, send *sender) error {
	msg := reducer.Message{ID: reducer.OccurrenceID(due), Text: st.Schedule.Text}
	next, err := t.Sessions.Append(ctx, id, st,
		reducer.Fact{Type: reducer.ScheduleFired, Actor: actor(), Wake: due},
		reducer.Fact{Type: reducer.MessageReceived, Actor: actor(), Message: &msg})
	if session.LostRace(err) {
		t.log().InfoContext(ctx, "tick: the session moved on before the schedule fired", "session", id, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("post schedule of %s: %w", id, err)
	}
	c.add(func(r *Report) { r.Posted++ })
	if err := send.send(ctx, wake.Wake{Session: id, Reason: wake.Message, Seq: next.LastSeq}, nil); err != nil {
		// The message is durable: the inbox is due, and a later run re-sends the wake.
		return fmt.Errorf("wake scheduled %s: %w", id, err)
	}
	return nil
}
