package worker

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/metrics"
	"github.com/baton-run/baton/internal/wake"
)

// HandleSQS is the resume function's Lambda handler, for an SQS event source
// mapping with ReportBatchItemFailures on. Each record's body is parsed as a
// wake; a body that is not one is logged and dropped, since no retry can
// mend it. Records for different sessions are handled concurrently, all at
// once unless Concurrency bounds them; records naming the same session are
// handled once, through the first of them. A record whose Handle failed is
// reported in BatchItemFailures, and given back (GiveBack) to be delivered
// again after a short backoff rather than the queue's visibility timeout;
// every other record is deleted by the event source mapping.
func (w *Worker) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return w.batch(ctx, ev, w.Handle), nil
}

// group is the records of one batch naming one session.
type group struct {
	wake    wake.Wake
	first   string // the messageId of the record handled
	receipt string // and its receipt handle
	records int
	sent    string // the record's SentTimestamp attribute (Unix ms), if any
	// receives is the record's ApproximateReceiveCount, 1 when absent.
	receives int
}

// batch handles ev with handle; HandleSQS passes w.Handle.
func (w *Worker) batch(ctx context.Context, ev events.SQSEvent, handle func(context.Context, wake.Wake) (Result, error)) events.SQSEventResponse {
	log := w.log()
	var groups []*group
	bySession := map[string]*group{}
	for _, rec := range ev.Records {
		wk, err := wake.Parse(rec.Body)
		if err != nil {
			log.ErrorContext(ctx, "not a wake; dropped", "messageId", rec.MessageId, "err", err)
			w.Metrics.WakeDropped(DropInvalid)
			continue
		}
		if g, ok := bySession[wk.Session]; ok {
			g.records++
			continue
		}
		n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
		if err != nil || n < 1 {
			n = 1
		}
		g := &group{wake: wk, first: rec.MessageId, receipt: rec.ReceiptHandle, records: 1, sent: rec.Attributes["SentTimestamp"], receives: n}
		bySession[wk.Session] = g
		groups = append(groups, g)
	}

	conc := w.Concurrency
	if conc <= 0 {
		conc = max(len(groups), 1)
	}
	failed := make([]bool, len(groups))
	late := make([]bool, len(groups)) // failed as the invocation's time ran out
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := handle(w.sentCtx(ctx, g.sent), g.wake); err != nil {
				log.ErrorContext(ctx, "wake failed; SQS will deliver it again", "session", g.wake.Session,
					"messageId", g.first, "err", err)
				failed[i] = true
				late[i] = errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
			}
		}()
	}
	wg.Wait()
	w.giveBack(ctx, groups, failed, late)

	// One failed record per session is enough for a retry: the others
	// name the same session and are deleted.
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, g := range groups {
		if failed[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: g.first})
		}
	}
	w.Metrics.WakesRetried(len(resp.BatchItemFailures))
	return resp
}

// sentCtx is ctx carrying the wake's send time (an SQS SentTimestamp,
// Unix milliseconds) for the metrics' WakeToResume, when it records any.
func (w *Worker) sentCtx(ctx context.Context, sent string) context.Context {
	if w.Metrics == nil || sent == "" {
		return ctx
	}
	ms, err := strconv.ParseInt(sent, 10, 64)
	if err != nil || ms <= 0 {
		return ctx
	}
	return metrics.WithWakeSent(ctx, time.UnixMilli(ms))
}

// giveBack makes each failed group's record visible again after its
// backoff, when the worker has a GiveBack: at once for one that ran out of
// the invocation's time, else 1 s doubling with each receive, at most
// MaxBackoff. It runs past ctx's end, briefly: the records it gives back
// would otherwise wait out the queue's visibility timeout.
func (w *Worker) giveBack(ctx context.Context, groups []*group, failed, late []bool) {
	if w.GiveBack == nil {
		return
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveBackTimeout)
	defer cancel()
	for i, g := range groups {
		if !failed[i] || g.receipt == "" {
			continue
		}
		after := Backoff(g.receives)
		if late[i] {
			after = 0
		}
		if err := w.GiveBack(gctx, g.receipt, after); err != nil {
			w.log().WarnContext(ctx, "could not give the wake back; it waits out the visibility timeout", "session", g.wake.Session, "err", err)
		}
	}
}

// giveBackTimeout bounds the give-backs after a batch.
const giveBackTimeout = 2 * time.Second

// Backoff is how long a wake received n times waits before it is
// delivered again after a failure: 1 s, doubling with each receive, at
// most MaxBackoff.
func Backoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}
