package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/pkg/reducer"
)

func TestAppendAndReadRoundTrip(t *testing.T) {
	store := sharedStore()
	s := newSession(t, store, ids.New("owner"), t0)
	s.message("hello")
	s.start()
	// Several facts in one append.
	next, batch := s.prepare(
		reducer.Fact{Type: reducer.ApprovalRequested, Turn: s.turn, Approval: &reducer.Approval{
			ID: "ap1", ToolCallID: "call1", Tool: "deploy", Input: []byte(`{"env":"prod"}`), Expires: t0.Add(time.Hour)}},
		reducer.Fact{Type: reducer.TurnSuspended, Turn: s.turn, Cause: reducer.CauseApproval},
	)
	if err := store.Append(t.Context(), s.id, next, batch...); err != nil {
		t.Fatal(err)
	}
	s.st, s.facts = next, append(s.facts, batch...)

	got, err := store.Facts(t.Context(), s.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, got), mustJSON(t, s.facts); g != w {
		t.Fatalf("facts differ:\n got %s\nwant %s", g, w)
	}
	reduced, err := reducer.Reduce(got)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, reduced), mustJSON(t, s.st); g != w {
		t.Fatalf("reduced state differs:\n got %s\nwant %s", g, w)
	}

	after2, err := store.Facts(t.Context(), s.id, 2)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := seqs(after2), seqRange(3, 5); !slices.Equal(g, w) {
		t.Errorf("Facts after 2 = %v, want %v", g, w)
	}
	none, err := store.Facts(t.Context(), s.id, 5)
	if err != nil || len(none) != 0 {
		t.Errorf("Facts after the last = %v, %v; want none", seqs(none), err)
	}
	unknown, err := store.Facts(t.Context(), ids.New("s"), 0)
	if err != nil || len(unknown) != 0 {
		t.Errorf("Facts of an unknown session = %v, %v; want none", seqs(unknown), err)
	}
}

func TestAppendRefusesBadInputAndWritesNothing(t *testing.T) {
	store := sharedStore()
	s := newSession(t, store, ids.New("owner"), t0)
	s.message("hi")
	good, facts := s.prepare(reducer.Fact{Type: reducer.MessageReceived,
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "op"}, Message: &reducer.Message{ID: "m2", Text: "x"}},
		reducer.Fact{Type: reducer.MessageReceived,
			Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "op"}, Message: &reducer.Message{ID: "m3", Text: "y"}})

	gap := slices.Clone(facts)
	gap[1].Seq++
	wrongNext := good
	wrongNext.LastSeq--
	tooMany := make([]reducer.Fact, MaxAppend+1)
	for i := range tooMany {
		tooMany[i] = reducer.Fact{Seq: int64(i) + 3, Type: reducer.MessageReceived}
	}
	manyNext := good
	manyNext.LastSeq = tooMany[len(tooMany)-1].Seq
	zero := slices.Clone(facts[:1])
	zero[0].Seq = 0
	zeroNext := good
	zeroNext.LastSeq = 0

	cases := []struct {
		name    string
		session string
		next    reducer.State
		facts   []reducer.Fact
	}{
		{"no facts", s.id, good, nil},
		{"gap in seqs", s.id, good, gap},
		{"next does not match last fact", s.id, wrongNext, facts},
		{"more than 99 facts", s.id, manyNext, tooMany},
		{"seq 0", s.id, zeroNext, zero},
		{"no session", "", good, facts},
		{"next has no status", s.id, reducer.State{LastSeq: good.LastSeq}, facts},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := store.Append(t.Context(), c.session, c.next, c.facts...)
			if err == nil {
				t.Fatal("Append accepted bad input")
			}
			if errors.Is(err, ErrConflict) {
				t.Fatalf("bad input reported as a conflict: %v", err)
			}
		})
	}
	got, err := store.Facts(t.Context(), s.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := seqs(got), seqRange(1, 2); !slices.Equal(g, w) {
		t.Fatalf("after refused appends the facts are %v, want %v", g, w)
	}
	h, err := store.Head(t.Context(), s.id)
	if err != nil || h.LastSeq != 2 {
		t.Fatalf("head after refused appends: %+v, %v; want last seq 2", h, err)
	}
}

func TestAppendSameExpectedSeqOnlyOneWins(t *testing.T) {
	store := sharedStore()
	s := newSession(t, store, ids.New("owner"), t0)
	s.message("hi")

	// Two writers both saw last seq 2 and each wants to start its own turn.
	mk := func(turn string) (reducer.State, reducer.Fact) {
		next, facts := s.prepare(reducer.Fact{Type: reducer.TurnStarted, Turn: turn, Stream: turn + "/s", Lease: t0.Add(time.Hour)})
		return next, facts[0]
	}
	nextA, a := mk("t_a")
	nextB, b := mk("t_b")
	if err := store.Append(t.Context(), s.id, nextA, a); err != nil {
		t.Fatalf("first append: %v", err)
	}
	err := store.Append(t.Context(), s.id, nextB, b)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("second append with the same expected seq: %v, want ErrConflict", err)
	}
	var cancelled *types.TransactionCanceledException
	if !errors.As(err, &cancelled) {
		t.Errorf("the conflict does not keep the AWS error: %v", err)
	}
	got, err := store.Facts(t.Context(), s.id, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Turn != "t_a" {
		t.Fatalf("facts after 2 = %+v, want only t_a's turn.started", got)
	}
	if h, err := store.Head(t.Context(), s.id); err != nil || h.Turn != "t_a" || h.LastSeq != 3 {
		t.Fatalf("head = %+v, %v; want turn t_a at seq 3", h, err)
	}

	// Creating the session again is a conflict too.
	again, created := (&session{t: t, now: t0}).prepare(reducer.Fact{Type: reducer.SessionCreated, Agent: "other",
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "op"}})
	if err := store.Append(t.Context(), s.id, again, created...); !errors.Is(err, ErrConflict) {
		t.Fatalf("re-creating a session: %v, want ErrConflict", err)
	}
	// So is skipping ahead of the last seq: the head says 3, not 4.
	ahead := nextA
	ahead.LastSeq = 5
	skip := reducer.Fact{Seq: 5, Type: reducer.TurnCancelled, Turn: "t_a", Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "op"}, Time: t0}
	if err := store.Append(t.Context(), s.id, ahead, skip); !errors.Is(err, ErrConflict) {
		t.Fatalf("appending seq 5 after 3: %v, want ErrConflict", err)
	}
}

func TestAppendRaceOneWinner(t *testing.T) {
	store := sharedStore()
	s := newSession(t, store, ids.New("owner"), t0)
	s.message("hi")

	const racers = 20
	var wg sync.WaitGroup
	errs := make([]error, racers)
	turns := make([]string, racers)
	for i := range racers {
		turns[i] = fmt.Sprintf("t_%02d", i)
		next, facts := s.prepare(reducer.Fact{Type: reducer.TurnStarted, Turn: turns[i], Stream: turns[i] + "/s", Lease: t0.Add(time.Hour)})
		wg.Go(func() {
			errs[i] = store.Append(t.Context(), s.id, next, facts...)
		})
	}
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("racers %d and %d both won", winner, i)
			}
			winner = i
		case !errors.Is(err, ErrConflict):
			t.Errorf("racer %d: %v, want ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no racer won")
	}
	got, err := store.Facts(t.Context(), s.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Turn != turns[winner] {
		t.Fatalf("facts = %v, want 3 ending with the winner's turn %s", seqs(got), turns[winner])
	}
}

func TestNonConflictErrorsAreNotConflicts(t *testing.T) {
	store := sharedStore()
	s := &session{t: t, now: t0}
	next, facts := s.prepare(reducer.Fact{Type: reducer.SessionCreated, Agent: "a",
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "op"}})

	t.Run("missing table", func(t *testing.T) {
		missing := New(testEnv.Emu.Clients.DynamoDB, ids.New("no-such-table"))
		err := missing.Append(t.Context(), ids.New("s"), next, facts...)
		if err == nil || errors.Is(err, ErrConflict) {
			t.Fatalf("append to a missing table: %v, want a non-conflict error", err)
		}
		var notFound *types.ResourceNotFoundException
		if !errors.As(err, &notFound) {
			t.Errorf("append to a missing table: %v, want ResourceNotFoundException", err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		id := ids.New("s")
		err := store.Append(ctx, id, next, facts...)
		if err == nil || errors.Is(err, ErrConflict) {
			t.Fatalf("append with a cancelled context: %v, want a non-conflict error", err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("append with a cancelled context: %v, want context.Canceled", err)
		}
		if _, err := store.Head(t.Context(), id); !errors.Is(err, ErrNotFound) {
			t.Errorf("head after a cancelled append: %v, want ErrNotFound", err)
		}
	})
	t.Run("classification", func(t *testing.T) {
		reasons := func(codes ...string) error {
			e := &types.TransactionCanceledException{Message: aws.String("cancelled")}
			for _, c := range codes {
				e.CancellationReasons = append(e.CancellationReasons, types.CancellationReason{Code: aws.String(c)})
			}
			return fmt.Errorf("op: %w", e)
		}
		for _, c := range []struct {
			err  error
			want bool
		}{
			{reasons("None", "ConditionalCheckFailed"), true},
			{&types.ConditionalCheckFailedException{}, true},
			{reasons("None", "TransactionConflict"), false},
			{reasons("ThrottlingError"), false},
			{reasons("ValidationError"), false},
			{&types.TransactionConflictException{}, false},
			{&types.ProvisionedThroughputExceededException{}, false},
			{&smithy.GenericAPIError{Code: "ThrottlingException"}, false},
			{context.DeadlineExceeded, false},
		} {
			if got := conditionFailed(c.err); got != c.want {
				t.Errorf("conditionFailed(%v) = %v, want %v", c.err, got, c.want)
			}
		}
	})
}

// The table the template declares (and the tests run on) has the keys and
// indexes the store needs.
func TestTemplateTableMatchesTableInput(t *testing.T) {
	out, err := testEnv.Emu.Clients.DynamoDB.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(testEnv.Table)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := provision.TableDiff(TableInput(testEnv.Table), out.Table); diff != "" {
		t.Fatalf("template table differs from TableInput: %s", diff)
	}
}
