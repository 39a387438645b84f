package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/traceparent"
)

// MaxDelay is the longest delay SQS supports on a message.
const MaxDelay = 15 * time.Minute

// Wake asks for a session to be looked at.
type Wake struct {
	Session string `json:"session"`
	Reason  Reason `json:"reason"`
	// Seq is the session's last seq when the wake was sent; informational only.
	Seq int64 `json:"seq"`
	// Trace is the W3C traceparent of the turn the wake is for, or of the
	// request that sent it; informational like Seq: the worker traces a
	// turn under the trace its facts record, and under this one only for
	// a turn whose facts have none. A body's trace that is not a
	// traceparent is dropped, not refused.
	Trace string `json:"trace,omitempty"`
}

// Waker sends wakes.
type Waker interface {
	// Wake sends w, to be delivered no earlier than delay from now.
	Wake(ctx context.Context, w Wake, delay time.Duration) error
}

// SQS sends wakes to an SQS queue.
type SQS struct {
	client *sqs.Client
	url    string
}

var _ Waker = (*SQS)(nil)

// NewSQS returns a Waker sending to the queue at queueURL.
func NewSQS(client *sqs.Client, queueURL string) *SQS {
	return &SQS{client: client, url: queueURL}
}

// Wake sends w with delay clamped to 0..MaxDelay, rounded up to whole seconds.
func (q *SQS) Wake(ctx context.Context, w Wake, delay time.Duration) error {
	if err := w.check(); err != nil {
		return fmt.Errorf("wake: send: %w", err)
	}
	if w.Trace != "" && !traceparent.Valid(w.Trace) {
		w.Trace = ""
	}
	body, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("wake: send %s for %s: %w", w.Reason, w.Session, err)
	}
	_, err = q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(q.url),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: delaySeconds(delay),
	})
	if err != nil {
		return fmt.Errorf("wake: send %s for %s: %w", w.Reason, w.Session, err)
	}
	return nil
}

// GiveBack makes a message received from the queue visible again after
// after (clamped to 0..MaxDelay, whole seconds), so that a wake its
// handler could not finish is delivered again then, not after the queue's
// visibility timeout.
func (q *SQS) GiveBack(ctx context.Context, receiptHandle string, after time.Duration) error {
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(receiptHandle),
		VisibilityTimeout: delaySeconds(after),
	})
	if err != nil {
		return fmt.Errorf("wake: give back a message: %w", err)
	}
	return nil
}

// delaySeconds clamps d to what SQS accepts, rounding up so a wake is never
// delivered before it was asked for.
func delaySeconds(d time.Duration) int32 {
	d = min(max(d, 0), MaxDelay)
	return int32((d + time.Second - 1) / time.Second)
}

// ErrInvalid is matched by every *ParseError.
var ErrInvalid = errors.New("wake: invalid message")

// ParseError rejects a message body that is not a wake.
type ParseError struct {
	Reason string
	Err    error // the decoding error, if any
}

func (e *ParseError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("wake: invalid message: %s: %v", e.Reason, e.Err)
	}
	return "wake: invalid message: " + e.Reason
}

// Unwrap returns the decoding error.
func (e *ParseError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ParseError) Is(target error) bool { return target == ErrInvalid }

// Parse reads a wake from a message body. Unknown fields are ignored; a body
// that is not one JSON object, or names no session, is a *ParseError.
func Parse(body string) (Wake, error) {
	dec := json.NewDecoder(strings.NewReader(body))
	var w Wake
	if err := dec.Decode(&w); err != nil {
		return Wake{}, &ParseError{Reason: "not a JSON wake", Err: err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Wake{}, &ParseError{Reason: "trailing data after the wake"}
	}
	if err := w.check(); err != nil {
		return Wake{}, err
	}
	if w.Trace != "" && !traceparent.Valid(w.Trace) {
		w.Trace = ""
	}
	return w, nil
}

// MaxSession is the longest session id a wake may name, as the operator
// API and the stream store allow.
const MaxSession = ids.MaxLen

func (w Wake) check() error {
	switch {
	case strings.TrimSpace(w.Session) == "":
		return &ParseError{Reason: "no session"}
	case ids.Check(w.Session) != nil:
		return &ParseError{Reason: "session " + ids.Check(w.Session).Error()}
	case w.Seq < 0:
		return &ParseError{Reason: fmt.Sprintf("negative seq %d", w.Seq)}
	}
	return nil
}
