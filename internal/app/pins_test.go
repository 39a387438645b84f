package app

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/wake"
)

type invokerFunc func(ctx context.Context, function, version string, payload []byte) error

func (f invokerFunc) InvokeVersion(ctx context.Context, function, version string, payload []byte) error {
	return f(ctx, function, version, payload)
}

// A pinned turn is handed over as the one record of an SQS event whose
// body is the wake, sent to the named version of the function.
func TestLambdaPinsHand(t *testing.T) {
	t.Parallel()
	var fn, version string
	var ev events.SQSEvent
	p := lambdaPins{function: "stack-resume", now: func() time.Time { return time.UnixMilli(1700000000000) },
		inv: invokerFunc(func(_ context.Context, f, v string, payload []byte) error {
			fn, version = f, v
			return json.Unmarshal(payload, &ev)
		})}
	w := wake.Wake{Session: "s_1", Reason: wake.Pinned, Seq: 9, Trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	if err := p.Hand(context.Background(), "7", w); err != nil {
		t.Fatal(err)
	}
	if fn != "stack-resume" || version != "7" || len(ev.Records) != 1 || ev.Records[0].Attributes["SentTimestamp"] != "1700000000000" {
		t.Fatalf("invoked %s:%s with %+v", fn, version, ev)
	}
	got, err := wake.Parse(ev.Records[0].Body)
	if err != nil || got != w {
		t.Fatalf("the record's wake %+v (%v), want %+v", got, err, w)
	}
}
