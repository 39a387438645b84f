package worker

import (
	"context"
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
// mend it. Records for different sessions are handled concurrently, at most
// Concurrency at once; records naming the same session are handled once,
// through the first of them. A record whose Handle failed is reported in
// BatchItemFailures, so SQS delivers it again after its visibility timeout;
// every other record is deleted by the event source mapping.
func (w *Worker) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return w.batch(ctx, ev, w.Handle), nil
}

// group is the records of one batch naming one session.
type group struct {
	wake    wake.Wake
	first   string // the messageId of the record handled
	records int
	sent    string // the record's SentTimestamp attribute (Unix ms), if any
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
		g := &group{wake: wk, first: rec.MessageId, records: 1, sent: rec.Attributes["SentTimestamp"]}
		bySession[wk.Session] = g
		groups = append(groups, g)
	}

	conc := w.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	failed := make([]bool, len(groups))
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
			}
		}()
	}
	wg.Wait()

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
