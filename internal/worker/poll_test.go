package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// startPoll runs Poll until the test ends, and fails the test if Poll does
// not return nil soon after its context ends.
func startPoll(t *testing.T, queueURL string, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Poll(ctx, emu().Clients.SQS, queueURL, handle, nil) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Poll returned %v, want nil after its context ended", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Poll did not return after its context ended")
		}
	})
}

func TestPollDeliversAWakeEndToEnd(t *testing.T) {
	t.Parallel()
	s := newEmuStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	inv := s.fresh(agent)
	id := newSession(t, inv, "demo", "What is the weather?")
	startPoll(t, s.queueURL, inv.worker.HandleSQS)

	if err := wake.NewSQS(inv.clients.SQS, s.queueURL).Wake(ctxT(t), wake.Wake{Session: id, Reason: "message", Seq: 2}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.clients.SQS.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(s.queueURL), MessageBody: aws.String("garbage")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the turn to complete", func() bool {
		st := teststack.Load(t, inv.sessions, id)
		return st.Turns == 1 && st.Last == reducer.TurnCompleted
	})
	// The wake and the garbage are both deleted: nothing comes back.
	eventually(t, 5*time.Second, "the queue to empty", func() bool { return s.queued(t) == 0 })
	time.Sleep(300 * time.Millisecond)
	if n := s.queued(t); n != 0 {
		t.Fatalf("%d messages back on the queue", n)
	}
	if n := count(teststack.Facts(t, inv.sessions, id), reducer.TurnStarted); n != 1 {
		t.Fatalf("%d turn.started facts, want 1", n)
	}
}

func TestPollLeavesFailuresForRedelivery(t *testing.T) {
	t.Parallel()
	s := newEmuStack(t)
	if _, err := emu().Clients.SQS.SetQueueAttributes(ctxT(t), &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(s.queueURL),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): "1"},
	}); err != nil {
		t.Fatal(err)
	}
	arn, err := emu().Clients.SQS.GetQueueAttributes(ctxT(t), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}

	// The handler fails the whole batch once, then reports the record as a
	// batch item failure once, then succeeds.
	var mu sync.Mutex
	var got []events.SQSMessage
	handle := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev.Records...)
		switch len(got) {
		case 1:
			return events.SQSEventResponse{}, errors.New("the invocation crashed")
		case 2:
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[0].MessageId}}}, nil
		}
		return events.SQSEventResponse{}, nil
	}
	startPoll(t, s.queueURL, handle)
	sent := wake.Wake{Session: "s_poll", Reason: "budget", Seq: 7}
	if err := wake.NewSQS(emu().Clients.SQS, s.queueURL).Wake(ctxT(t), sent, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "three deliveries", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3
	})
	eventually(t, 5*time.Second, "the queue to empty", func() bool { return s.queued(t) == 0 })
	time.Sleep(1500 * time.Millisecond) // past the visibility timeout
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d deliveries, want 3: the handled wake came back", len(got))
	}
	for i, rec := range got {
		w, err := wake.Parse(rec.Body)
		switch {
		case err != nil || w != sent:
			t.Fatalf("delivery %d: body %q", i, rec.Body)
		case rec.MessageId != got[0].MessageId || rec.MessageId == "" || rec.ReceiptHandle == "":
			t.Fatalf("delivery %d: message id %q, receipt handle %q", i, rec.MessageId, rec.ReceiptHandle)
		case rec.EventSource != "aws:sqs" || rec.EventSourceARN != arn.Attributes["QueueArn"] ||
			!strings.HasSuffix(rec.EventSourceARN, s.queueURL[strings.LastIndex(s.queueURL, "/")+1:]) || rec.AWSRegion != "us-east-1":
			t.Fatalf("delivery %d: source %q %q %q", i, rec.EventSource, rec.EventSourceARN, rec.AWSRegion)
		case rec.Attributes["ApproximateReceiveCount"] != string(rune('1'+i)):
			t.Fatalf("delivery %d: ApproximateReceiveCount %q", i, rec.Attributes["ApproximateReceiveCount"])
		case rec.Attributes["SentTimestamp"] == "" || rec.Md5OfBody == "":
			t.Fatalf("delivery %d: attributes %v, md5 %q", i, rec.Attributes, rec.Md5OfBody)
		}
	}
}
