package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/internal/traceparent"
)

// MaxBatch is the most wakes one WakeBatch sends: SQS's limit on the
// entries of a SendMessageBatch.
const MaxBatch = 10

// Batcher is a Waker that also sends wakes in batches, as the tick does
// for a burst of due sessions.
type Batcher interface {
	Waker
	// WakeBatch sends up to MaxBatch wakes, without delay, in one request.
	// It returns the wakes it could not send, with an error saying why;
	// the others are sent.
	WakeBatch(ctx context.Context, ws []Wake) (failed []Wake, err error)
}

var _ Batcher = (*SQS)(nil)

// WakeBatch sends ws in one SendMessageBatch, each wake an entry, and
// returns the wakes SQS refused (or all of them, when the request failed
// or a wake is invalid) with an error naming each one's reason.
func (q *SQS) WakeBatch(ctx context.Context, ws []Wake) ([]Wake, error) {
	switch {
	case len(ws) == 0:
		return nil, nil
	case len(ws) > MaxBatch:
		return ws, fmt.Errorf("wake: send a batch of %d wakes: at most %d a batch", len(ws), MaxBatch)
	}
	entries := make([]sqstypes.SendMessageBatchRequestEntry, len(ws))
	for i, w := range ws {
		if err := w.check(); err != nil {
			return ws, fmt.Errorf("wake: send a batch: wake %d: %w", i, err)
		}
		if w.Trace != "" && !traceparent.Valid(w.Trace) {
			w.Trace = ""
		}
		body, err := json.Marshal(w)
		if err != nil {
			return ws, fmt.Errorf("wake: send a batch: %s for %s: %w", w.Reason, w.Session, err)
		}
		entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))}
	}
	out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		return ws, fmt.Errorf("wake: send a batch of %d wakes: %w", len(ws), err)
	}
	var failed []Wake
	var errs []error
	for _, f := range out.Failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || i < 0 || i >= len(ws) {
			return ws, fmt.Errorf("wake: send a batch of %d wakes: SQS failed an entry %q it was not sent", len(ws), aws.ToString(f.Id))
		}
		failed = append(failed, ws[i])
		errs = append(errs, fmt.Errorf("%s for %s: %s: %s", ws[i].Reason, ws[i].Session, aws.ToString(f.Code), aws.ToString(f.Message)))
	}
	if len(failed) > 0 {
		return failed, fmt.Errorf("wake: send a batch: %d of %d wakes refused: %w", len(failed), len(ws), errors.Join(errs...))
	}
	return nil, nil
}
