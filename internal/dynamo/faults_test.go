package dynamo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestAppendThroughFaults appends the second fact of a session through a
// fault proxy in front of the emulator: a transient fault is retried and
// the fact lands once; a lost response is found by reading it back; a
// persistent fault fails with a transient, non-conflict error and leaves
// the log as it was.
func TestAppendThroughFaults(t *testing.T) {
	const op = "dynamodb:TransactWriteItems"
	for _, c := range []struct {
		name     string
		rules    []faults.Rule
		landed   bool // the fact is there afterwards
		wantErr  bool
		deadline bool
	}{
		{"throughput exceeded twice", []faults.Rule{{Op: op, Times: 2, Fault: faults.Throughput}}, true, false, false},
		{"throttled twice", []faults.Rule{{Op: op, Times: 2, Fault: faults.Throttling}}, true, false, false},
		{"500 twice", []faults.Rule{{Op: op, Times: 2, Fault: faults.ServerError}}, true, false, false},
		{"timeout twice", []faults.Rule{{Op: op, Times: 2, Fault: faults.Timeout}}, true, false, false},
		{"response lost", []faults.Rule{{Op: op, Times: 1, Fault: faults.LostResponse}}, true, false, false},
		{"every response lost", []faults.Rule{{Op: op, Fault: faults.LostResponse}}, true, false, false},
		{"lost, then throttled until the SDK gives up", []faults.Rule{
			{Op: op, Times: 1, Fault: faults.LostResponse}, {Op: op, Fault: faults.Throttling}}, true, false, false},
		{"throttled for good", []faults.Rule{{Op: op, Fault: faults.Throttling}}, false, true, false},
		{"500 for good", []faults.Rule{{Op: op, Fault: faults.ServerError}}, false, true, false},
		{"timeouts for good", []faults.Rule{{Op: op, Fault: faults.Timeout}}, false, true, false},
		{"hung until the deadline", []faults.Rule{{Op: op, Fault: faults.Timeout}}, false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ft := faults.New(nil)
			store := New(faults.Clients(testEnv.Emu.URL, ft).DynamoDB, testEnv.Table)
			s := newSession(t, store, "alice", t0)
			next, fs := s.prepare(reducer.Fact{Type: reducer.MessageReceived,
				Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, Message: &reducer.Message{ID: "m1", Text: "hi"}})
			ctx := t.Context()
			if c.deadline {
				// A timeout that hangs until the caller's deadline.
				ft.Delay = time.Hour
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
			}
			ft.Set(c.rules...)
			err := store.Append(ctx, s.id, next, fs...)
			ft.Set()
			if len(ft.Injected()) == 0 {
				t.Fatal("no fault injected")
			}
			if errors.Is(err, ErrConflict) {
				t.Fatalf("append: %v, a fault taken for a lost race", err)
			}
			if (err != nil) != c.wantErr {
				t.Fatalf("append: %v, want error %v", err, c.wantErr)
			}
			if c.deadline && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("append: %v, want DeadlineExceeded", err)
			}
			if err != nil && !c.deadline && !awsenv.Transient(err) {
				t.Errorf("append: %v, want a transient error", err)
			}
			got, err := sharedStore().Facts(t.Context(), s.id, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := []int64{1}
			if c.landed {
				want = []int64{1, 2}
			}
			if !equal(seqs(got), want) {
				t.Fatalf("facts %v, want %v", seqs(got), want)
			}
			h, err := sharedStore().Head(t.Context(), s.id)
			if err != nil || h.LastSeq != int64(len(want)) {
				t.Fatalf("head %+v, %v; want last seq %d", h, err, len(want))
			}
		})
	}
}

// TestLostResponseOfALosingAppendIsStillAConflict: a writer whose
// transaction failed its condition, and whose answer was then lost, reads
// the fact back and finds another's: ErrConflict, not success.
func TestLostResponseOfALosingAppendIsStillAConflict(t *testing.T) {
	ft := faults.New(nil)
	store := New(faults.Clients(testEnv.Emu.URL, ft).DynamoDB, testEnv.Table)
	s := newSession(t, store, "alice", t0)
	next, fs := s.prepare(reducer.Fact{Type: reducer.MessageReceived,
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, Message: &reducer.Message{ID: "m1", Text: "first"}})
	s.message("the winner") // seq 2 taken by another writer
	ft.Set(faults.Rule{Op: "dynamodb:TransactWriteItems", Times: 1, Fault: faults.LostResponse})
	err := store.Append(t.Context(), s.id, next, fs...)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("append: %v, want ErrConflict", err)
	}
	got, _ := sharedStore().Facts(t.Context(), s.id, 0)
	if len(got) != 2 || got[1].Message.Text != "the winner" {
		t.Fatalf("facts %+v", got)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkAppendLostResponse measures what a lost answer costs an append
// of one fact: requests sent (the SDK's resend and the read-back) and time,
// against an append whose answer arrives. Each append has fresh clients,
// so the SDK's retry quota is full.
func BenchmarkAppendLostResponse(b *testing.B) {
	for _, c := range []struct {
		name  string
		rules []faults.Rule
	}{
		{"answered", nil},
		{"lost", []faults.Rule{{Op: "dynamodb:TransactWriteItems", Times: 1, Fault: faults.LostResponse}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var requests int64
			for b.Loop() {
				b.StopTimer()
				ft := faults.New(nil, c.rules...)
				store := countingStore(faults.Clients(testEnv.Emu.URL, ft).DynamoDB, testEnv.Table)
				f := reducer.Fact{Seq: 1, Time: t0, Type: reducer.SessionCreated, Agent: "a",
					Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "op"}}
				next, err := (reducer.State{}).Apply(f)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := store.Append(b.Context(), "bench-"+newWriter(), next, f); err != nil {
					b.Fatal(err)
				}
				requests += store.Requests()
			}
			b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
		})
	}
}

// TestReadsRetryAnAnswerCutShort cuts short the answers to a session's
// reads: once, and the read is sent again and returns the facts; for good,
// and it fails with a transient error, bounded.
func TestReadsRetryAnAnswerCutShort(t *testing.T) {
	ft := faults.New(nil)
	store := New(faults.Clients(testEnv.Emu.URL, ft).DynamoDB, testEnv.Table)
	s := newSession(t, store, "alice", t0)
	ft.Set(faults.Rule{Op: "dynamodb:Query", Times: 1, Fault: faults.CutShort},
		faults.Rule{Op: "dynamodb:GetItem", Times: 1, Fault: faults.CutShort})
	if fs, err := store.Facts(t.Context(), s.id, 0); err != nil || len(fs) != 1 {
		t.Fatalf("facts after a cut-short answer: %v, %v; want the one fact", fs, err)
	}
	if _, err := store.Head(t.Context(), s.id); err != nil {
		t.Fatalf("head after a cut-short answer: %v", err)
	}
	if n := len(ft.Injected()); n != 2 {
		t.Fatalf("%d faults injected, want 2", n)
	}
	ft.Set(faults.Rule{Op: "dynamodb:Query", Fault: faults.CutShort})
	_, err := store.Tail(t.Context(), s.id)
	if err == nil || !awsenv.Transient(err) {
		t.Fatalf("tail with every answer cut short: %v, want a transient error", err)
	}
	if n := ft.Count("dynamodb:Query"); n != 1+maxResend+1 {
		t.Fatalf("%d cut-short Queries, want %d (1 + %d resends)", n, 1+maxResend+1, maxResend)
	}
}
