package lifecycle_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// TestDeleteAgainAfterTheIdIsReused: a chat's first message creates its
// session; deleted, the same id names a new session when a message comes
// again, and that one is deleted like the first, life after life, and the
// retention sweep leaves no delete unfinished. (The earlier session's
// tombstone used to fail the next one's condition: every later delete
// answered a conflict, and the sweep skipped it forever.)
func TestDeleteAgainAfterTheIdIsReused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, id := store(), ids.New("chat")
	ok := func(reducer.State) error { return nil }
	for life := range 3 {
		st, _, err := s.Converse(ctx, id, "alice", "demo", reducer.Message{ID: ids.New("m"), Text: "hi"}, ok)
		if err != nil || st.LastSeq != 2 || st.Owner != "alice" {
			t.Fatalf("life %d: first message: %+v %v", life, st, err)
		}
		if err := s.Delete(ctx, id, "alice", "alice"); err != nil {
			t.Fatalf("life %d: delete: %v", life, err)
		}
		if _, err := s.Load(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("life %d: load after delete: %v", life, err)
		}
		tomb, err := facts().Tombstone(ctx, id)
		if err != nil || !tomb.Purged || tomb.Owner != "alice" {
			t.Fatalf("life %d: tombstone %+v, %v", life, tomb, err)
		}
		if err := s.Delete(ctx, id, "alice", "alice"); err != nil {
			t.Fatalf("life %d: repeated delete: %v", life, err)
		}
	}
	if err := s.Delete(ctx, id, "bob", "bob"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("another owner's delete of the deleted id: %v", err)
	}
}

// TestCreateWhileAnEarlierDeleteIsUnfinished: while the delete of a
// session is cut short after its burial, its id cannot name a new
// session (ErrDeleting, nothing written), so the purge the delete still
// owes cannot remove a new session's facts or streams; once the delete is
// finished, the id is free.
func TestCreateWhileAnEarlierDeleteIsUnfinished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, log, id := store(), facts(), ids.New("chat")
	if _, err := s.Create(ctx, id, "alice", "demo"); err != nil {
		t.Fatal(err)
	}
	h, err := log.Head(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Bury(ctx, h, "alice", time.Now()); err != nil { // a delete killed after its burial
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, id, "bob", "demo"); !errors.Is(err, session.ErrDeleting) {
		t.Fatalf("create during the delete: %v, want ErrDeleting", err)
	}
	_, _, err = s.Converse(ctx, id, "alice", "demo", reducer.Message{ID: "m1", Text: "hi"}, func(reducer.State) error { return nil })
	if !errors.Is(err, session.ErrDeleting) {
		t.Fatalf("first chat message during the delete: %v, want ErrDeleting", err)
	}
	if got, err := log.Facts(ctx, id, 0); err != nil || len(got) != 1 || got[0].Type != reducer.SessionCreated || got[0].Owner != "alice" {
		t.Fatalf("facts after the refused creates: %+v, %v; want the buried session's one", got, err)
	}
	if _, err := log.Head(ctx, id); !errors.Is(err, dynamo.ErrNotFound) {
		t.Fatalf("head after the refused creates: %v", err)
	}
	if err := s.Delete(ctx, id, "alice", "alice"); err != nil { // the owner's retry finishes it
		t.Fatal(err)
	}
	if st, err := s.Create(ctx, id, "bob", "demo"); err != nil || st.Owner != "bob" {
		t.Fatalf("create once the delete finished: %+v, %v", st, err)
	}
}

// racingLog is a fact log whose Bury first lets a whole other delete of
// the session run: the delete through it loses its race, every time.
type racingLog struct {
	*dynamo.Store
	other *session.Store
}

func (r racingLog) Bury(ctx context.Context, h dynamo.Head, by string, at time.Time) error {
	if err := r.other.Delete(ctx, h.Session, h.Owner, by); err != nil {
		return err
	}
	return r.Store.Bury(ctx, h, by, at)
}

// TestConcurrentDeleteLoserAnswersAsARepeat: of two deletes of one
// session, the one that loses the race is answered as a repeated delete
// is (nil, a 204), not with a conflict, and the session is gone whole.
func TestConcurrentDeleteLoserAnswersAsARepeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain, id := store(), ids.New("s")
	if _, err := plain.Create(ctx, id, "alice", "demo"); err != nil {
		t.Fatal(err)
	}
	c := env.Clients()
	loser := session.New(racingLog{Store: facts(), other: plain}, streams.New(c.S3, env.Bucket))
	loser.Waker = wake.NewSQS(c.SQS, env.QueueURL)
	if err := loser.Delete(ctx, id, "alice", "alice"); err != nil {
		t.Fatalf("the losing delete: %v, want nil", err)
	}
	tomb, err := facts().Tombstone(ctx, id)
	if err != nil || !tomb.Purged {
		t.Fatalf("tombstone %+v, %v", tomb, err)
	}
	if got, err := facts().Facts(ctx, id, 0); err != nil || len(got) != 0 {
		t.Fatalf("facts left: %d, %v", len(got), err)
	}
}

// env is the package's table, bucket and queue.
var env testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// store is a session store on the package's table, bucket and queue.
func store() *session.Store {
	c := env.Clients()
	s := session.New(facts(), streams.New(c.S3, env.Bucket))
	s.Waker = wake.NewSQS(c.SQS, env.QueueURL)
	return s
}

// facts is the package's fact log on the emulator.
func facts() *dynamo.Store { return dynamo.New(env.Clients().DynamoDB, env.Table) }
