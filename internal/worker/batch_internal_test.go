package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/wake"
)

func TestBatchHandlesEachSessionOnceAndBounded(t *testing.T) {
	t.Parallel()
	w := &Worker{Concurrency: 2}
	var bodies []string
	for _, s := range []string{"a", "a", "b", "c", "a", "d", "b", "e"} {
		bodies = append(bodies, fmt.Sprintf(`{"session":%q,"reason":"message"}`, s))
	}
	bodies = append(bodies, "{not a wake")
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), Body: b})
	}

	var mu sync.Mutex
	calls := map[string]int{}
	var inFlight, peak atomic.Int32
	handle := func(ctx context.Context, wk wake.Wake) (Result, error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		inFlight.Add(-1)
		mu.Lock()
		calls[wk.Session]++
		mu.Unlock()
		if wk.Session == "b" || wk.Session == "d" {
			return Result{}, errors.New("transient")
		}
		return Result{}, nil
	}
	resp := w.batch(context.Background(), ev, handle)

	if fmt.Sprint(calls) != "map[a:1 b:1 c:1 d:1 e:1]" {
		t.Fatalf("calls = %v, want each session once", calls)
	}
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrency %d, want 2", p)
	}
	// b's first record (m2) and d's (m5) failed; their duplicates, the
	// other sessions' records and the garbage are deleted.
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if fmt.Sprint(got) != "[m2 m5]" {
		t.Fatalf("failures = %v, want [m2 m5]", got)
	}
}
