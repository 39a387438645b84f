package worker

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/wake"
)

// FuzzBatch hands the resume handler a batch of two fuzzed SQS bodies and
// one good wake. A body that is not a wake reaches nothing: no session is
// handled for it and it is not reported for a retry (it is dropped); each
// session a body names is handled once, with the wake Parse reads.
func FuzzBatch(f *testing.F) {
	f.Add(`{"session":"s_1","reason":"budget","seq":3}`, `{"session":"s_1","reason":"lease"}`)
	f.Add(`{"session":"s_2"}`, `not a wake`)
	f.Add(`{"session":"a\u0000b"}`, `{"session":"`+"\xff"+`"}`)
	f.Add(``, `null`)
	f.Fuzz(func(t *testing.T, a, b string) {
		const good = `{"session":"s_good","reason":"message","seq":1}`
		ev := events.SQSEvent{Records: []events.SQSMessage{
			{MessageId: "m0", Body: a}, {MessageId: "m1", Body: b}, {MessageId: "m2", Body: good},
		}}
		want := map[string]wake.Wake{}
		for _, body := range []string{a, b, good} {
			if wk, err := wake.Parse(body); err == nil {
				if _, seen := want[wk.Session]; !seen {
					want[wk.Session] = wk
				}
			}
		}
		var mu sync.Mutex
		got := map[string]wake.Wake{}
		calls := 0
		w := &Worker{Log: slog.New(slog.DiscardHandler)}
		resp := w.batch(context.Background(), ev, func(_ context.Context, wk wake.Wake) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			got[wk.Session] = wk
			return Result{}, nil
		})
		if calls != len(want) || len(got) != len(want) {
			t.Fatalf("handled %v in %d calls, want %v", got, calls, want)
		}
		for s, wk := range want {
			if got[s] != wk {
				t.Fatalf("session %q handled with %+v, want %+v", s, got[s], wk)
			}
		}
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("failures %+v: nothing failed", resp.BatchItemFailures)
		}
	})
}
