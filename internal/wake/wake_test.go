package wake

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
)

// newQueue is a wake queue of the test's own, since kumo's state is
// process-wide.
func newQueue(t *testing.T) string {
	t.Helper()
	return testenv.New(t).QueueURL
}

func receive(t *testing.T, url string, wait int32) []sqstypes.Message {
	t.Helper()
	out, err := testenv.Emulator().Clients.SQS.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: wait,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

func TestSendReceiveParse(t *testing.T) {
	url := newQueue(t)
	waker := NewSQS(testenv.Emulator().Clients.SQS, url)
	sent := Wake{Session: ids.New("s"), Reason: "budget", Seq: 42}
	if err := waker.Wake(t.Context(), sent, 0); err != nil {
		t.Fatal(err)
	}
	msgs := receive(t, url, 2)
	if len(msgs) != 1 {
		t.Fatalf("received %d messages, want 1", len(msgs))
	}
	got, err := Parse(aws.ToString(msgs[0].Body))
	if err != nil {
		t.Fatal(err)
	}
	if got != sent {
		t.Fatalf("got %+v, want %+v", got, sent)
	}
	if err := waker.Wake(t.Context(), Wake{Reason: "budget"}, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("sending a wake without a session: %v, want ErrInvalid", err)
	}
	if msgs := receive(t, url, 0); len(msgs) != 0 {
		t.Fatalf("a refused wake was sent: %d messages", len(msgs))
	}
}

func TestDelayIsHonoured(t *testing.T) {
	url := newQueue(t)
	waker := NewSQS(testenv.Emulator().Clients.SQS, url)
	sent := Wake{Session: ids.New("s"), Reason: "approval"}
	start := time.Now()
	if err := waker.Wake(t.Context(), sent, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if msgs := receive(t, url, 0); len(msgs) != 0 {
		t.Fatalf("a wake delayed 2s was visible at once: %d messages", len(msgs))
	}
	// Poll rather than long-poll: kumo's long poll wakes only on a send, not
	// when a delayed message becomes visible.
	var msgs []sqstypes.Message
	for time.Since(start) < 6*time.Second && len(msgs) == 0 {
		time.Sleep(100 * time.Millisecond)
		msgs = receive(t, url, 0)
	}
	elapsed := time.Since(start)
	if len(msgs) != 1 {
		t.Fatalf("the delayed wake never arrived (%d messages after %v)", len(msgs), elapsed)
	}
	if elapsed < 1900*time.Millisecond {
		t.Fatalf("the delayed wake arrived after %v, want about 2s", elapsed)
	}
	if got, err := Parse(aws.ToString(msgs[0].Body)); err != nil || got != sent {
		t.Fatalf("Parse = %+v, %v; want %+v", got, err, sent)
	}
}

func TestDelayClamped(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int32
	}{
		{-time.Hour, 0},
		{0, 0},
		{time.Millisecond, 1},
		{1500 * time.Millisecond, 2},
		{2 * time.Second, 2},
		{15 * time.Minute, 900},
		{time.Hour, 900},
	} {
		if got := delaySeconds(c.d); got != c.want {
			t.Errorf("delaySeconds(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	// A negative delay is sent at once rather than refused.
	url := newQueue(t)
	if err := NewSQS(testenv.Emulator().Clients.SQS, url).Wake(t.Context(), Wake{Session: "s_neg", Reason: "wake"}, -time.Minute); err != nil {
		t.Fatal(err)
	}
	if msgs := receive(t, url, 2); len(msgs) != 1 {
		t.Fatalf("a wake with a negative delay: %d messages, want 1", len(msgs))
	}
}

func TestParseRejectsBadBodies(t *testing.T) {
	for name, body := range map[string]string{
		"empty":           "",
		"garbage":         "wake up!",
		"array":           `["s_1"]`,
		"null":            "null",
		"no session":      `{"reason":"budget","seq":3}`,
		"blank session":   `{"session":"  ","reason":"budget"}`,
		"session number":  `{"session":5}`,
		"seq string":      `{"session":"s_1","seq":"3"}`,
		"negative seq":    `{"session":"s_1","seq":-1}`,
		"two objects":     `{"session":"s_1"}{"session":"s_2"}`,
		"truncated":       `{"session":"s_1"`,
		"trailing tokens": `{"session":"s_1"} x`,
	} {
		w, err := Parse(body)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%s %q) = %+v, %v; want ErrInvalid", name, body, w, err)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Reason == "" {
			t.Errorf("Parse(%s): %v is not a *ParseError with a reason", name, err)
		}
	}
	// Unknown fields and surrounding whitespace are fine.
	w, err := Parse(" {\"session\":\"s_1\",\"reason\":\"lease\",\"seq\":7,\"extra\":true}\n")
	if err != nil || w != (Wake{Session: "s_1", Reason: "lease", Seq: 7}) {
		t.Fatalf("Parse of a good body = %+v, %v", w, err)
	}
}

// TestGiveBack: a received wake is invisible for the receive's visibility
// timeout; given back with no delay, the next receive gets it again.
func TestGiveBack(t *testing.T) {
	t.Parallel()
	url := newQueue(t)
	client := testenv.Emulator().Clients.SQS
	waker := NewSQS(client, url)
	if err := waker.Wake(t.Context(), Wake{Session: ids.New("s"), Reason: "message"}, 0); err != nil {
		t.Fatal(err)
	}
	out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 600, WaitTimeSeconds: 2})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	if msgs := receive(t, url, 0); len(msgs) != 0 {
		t.Fatalf("a received message is visible: %d", len(msgs))
	}
	if err := waker.GiveBack(t.Context(), aws.ToString(out.Messages[0].ReceiptHandle), 0); err != nil {
		t.Fatal(err)
	}
	if msgs := receive(t, url, 2); len(msgs) != 1 || aws.ToString(msgs[0].MessageId) != aws.ToString(out.Messages[0].MessageId) {
		t.Fatalf("after the give-back: %d messages, want the same one again", len(msgs))
	}
	if err := waker.GiveBack(t.Context(), "not-a-receipt", 0); err == nil {
		t.Fatal("a give-back of an unknown receipt handle succeeded")
	}
}
