package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// TestBatchIsAsWideAsItsBatch: with no Concurrency, the ten sessions of a
// batch are all in hand at once (each waits until all ten are in).
func TestBatchIsAsWideAsItsBatch(t *testing.T) {
	t.Parallel()
	w := &Worker{}
	var ev events.SQSEvent
	for i := range 10 {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), Body: fmt.Sprintf(`{"session":"s%d","reason":"message"}`, i)})
	}
	var in atomic.Int32
	all := make(chan struct{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp := w.batch(ctx, ev, func(ctx context.Context, wk wake.Wake) (Result, error) {
		if in.Add(1) == 10 {
			close(all)
		}
		select {
		case <-all:
			return Result{}, nil
		case <-ctx.Done():
			return Result{}, fmt.Errorf("only %d of 10 in hand at once", in.Load())
		}
	})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v: the batch was not handled all at once", resp.BatchItemFailures)
	}
}

// TestFailedWakesAreGivenBack: a wake that failed is given back after the
// backoff for its receive count; one that failed because the invocation's
// time ran out is given back at once; the others are not given back.
func TestFailedWakesAreGivenBack(t *testing.T) {
	t.Parallel()
	type back struct {
		receipt string
		after   time.Duration
	}
	var mu sync.Mutex
	var got []back
	w := &Worker{GiveBack: func(ctx context.Context, receipt string, after time.Duration) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		mu.Lock()
		got = append(got, back{receipt, after})
		mu.Unlock()
		return nil
	}}
	rec := func(session, receives string) events.SQSMessage {
		return events.SQSMessage{MessageId: "m-" + session, ReceiptHandle: "r-" + session,
			Body: fmt.Sprintf(`{"session":%q,"reason":"message"}`, session), Attributes: map[string]string{"ApproximateReceiveCount": receives}}
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{rec("ok", "1"), rec("flaky", "3"), rec("late", "1")}}
	ctx, cancel := context.WithCancel(t.Context())
	flaky := make(chan struct{})
	resp := w.batch(ctx, ev, func(ctx context.Context, wk wake.Wake) (Result, error) {
		switch wk.Session {
		case "flaky":
			defer close(flaky)
			return Result{}, errors.New("transient")
		case "late":
			<-flaky
			cancel() // the invocation's deadline
			return Result{}, ctx.Err()
		}
		return Result{}, nil
	})
	if len(resp.BatchItemFailures) != 2 {
		t.Fatalf("failures %+v, want flaky and late", resp.BatchItemFailures)
	}
	slices.SortFunc(got, func(a, b back) int { return strings.Compare(a.receipt, b.receipt) })
	want := []back{{"r-flaky", 4 * time.Second}, {"r-late", 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("given back %+v, want %+v", got, want)
	}
	for n, d := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 9: 256 * time.Second, 10: MaxBackoff, 100: MaxBackoff} {
		if got := Backoff(n); got != d {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, d)
		}
	}
}
