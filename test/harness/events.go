package harness

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/internal/wake"
)

// kumo has no event source mappings and no schedules: a test that wants a
// function to see SQS batches or EventBridge schedules receives the messages
// (or decides it is time) itself and invokes the function with the event
// Lambda would have sent. These build those events.

// Account is the account id kumo uses in ARNs.
const Account = "000000000000"

// SQSEvent shapes received messages as the event an SQS event source mapping
// invokes a function with, exactly as the dev server's poller does.
func SQSEvent(msgs []sqstypes.Message, queueARN, region string) events.SQSEvent {
	return wake.Event(msgs, queueARN, region)
}

// ScheduledEvent returns the JSON of the event an EventBridge schedule rule
// (rate or cron) invokes its target with at time at.
func ScheduledEvent(ruleARN, region string, at time.Time) ([]byte, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("harness: event id: %w", err)
	}
	h := hex.EncodeToString(b[:])
	id := h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	ev := map[string]any{
		"version":     "0",
		"id":          id,
		"detail-type": "Scheduled Event",
		"source":      "aws.events",
		"account":     Account,
		"time":        at.UTC().Format(time.RFC3339),
		"region":      region,
		"resources":   []string{ruleARN},
		"detail":      map[string]any{},
	}
	out, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("harness: scheduled event: %w", err)
	}
	return out, nil
}
