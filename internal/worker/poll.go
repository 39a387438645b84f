package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/internal/wake"
)

// Poll tuning.
const (
	// pollBatch is the most messages one receive asks for, as Lambda's
	// default batch size.
	pollBatch = 10
	// pollers bounds the batches handled at once, as the several pollers of
	// an event source mapping would.
	pollers = 4
	// idleDelay is the pause after an empty receive. Receives do not long
	// poll: kumo's long poll misses messages whose delay ends while it waits.
	idleDelay = 100 * time.Millisecond
	// errorDelay is the pause after a failed receive.
	errorDelay = time.Second
	// deleteTimeout bounds a delete, which runs even as ctx ends so that a
	// handled batch is not delivered again.
	deleteTimeout = 5 * time.Second
)

// Poll emulates Lambda's SQS event source mapping, for the local dev server
// and tests: it receives up to 10 messages at a time from queueURL, passes
// them to handle as an events.SQSEvent shaped like Lambda's, and deletes
// every record not reported in BatchItemFailures. Failed records, and all
// records of a batch whose handler returned an error, are left for SQS to
// deliver again after their visibility timeout. Up to 4 batches are handled
// at once. Poll returns nil once ctx is done and the batches in hand are
// finished, or an error if the queue's ARN cannot be read at the start.
func Poll(ctx context.Context, client *sqs.Client, queueURL string, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("queue", queueURL)
	arn, err := queueARN(ctx, client, queueURL)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	region := client.Options().Region

	sem := make(chan struct{}, pollers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queueURL),
			MaxNumberOfMessages:         pollBatch,
			WaitTimeSeconds:             0,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil || len(out.Messages) == 0 {
			<-sem
			if ctx.Err() != nil {
				return nil
			}
			delay := idleDelay
			if err != nil {
				log.WarnContext(ctx, "poll: receive failed", "err", err)
				delay = errorDelay
			}
			if !sleep(ctx, delay) {
				return nil
			}
			continue
		}
		ev := wake.Event(out.Messages, arn, region)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			deliver(ctx, client, queueURL, ev, handle, log)
		}()
	}
}

// deliver hands one batch to handle and deletes what it handled.
func deliver(ctx context.Context, client *sqs.Client, queueURL string, ev events.SQSEvent, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), log *slog.Logger) {
	resp, err := handle(ctx, ev)
	if err != nil {
		log.ErrorContext(ctx, "poll: the handler failed; the batch will be delivered again", "records", len(ev.Records), "err", err)
		return
	}
	failed := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	for _, rec := range ev.Records {
		if failed[rec.MessageId] {
			continue
		}
		if _, err := client.DeleteMessage(dctx, &sqs.DeleteMessageInput{
			QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(rec.ReceiptHandle),
		}); err != nil {
			// The message comes back after its visibility timeout; handling
			// it again changes nothing.
			log.WarnContext(ctx, "poll: delete failed", "messageId", rec.MessageId, "err", err)
		}
	}
}

func queueARN(ctx context.Context, client *sqs.Client, queueURL string) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("worker: poll %s: read the queue ARN: %w", queueURL, err)
	}
	arn := out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", errors.New("worker: poll " + queueURL + ": the queue has no ARN")
	}
	return arn, nil
}

// sleep waits d or until ctx is done, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
