package session_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// env is the package's table, bucket and queue.
var env testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

func store() *session.Store {
	c := env.Clients()
	s := session.New(dynamo.New(c.DynamoDB, env.Table), streams.New(c.S3, env.Bucket))
	s.Waker = wake.NewSQS(c.SQS, env.QueueURL)
	return s
}

var alice = reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}

func TestCreateIsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, id := store(), ids.New("s")
	if _, err := s.Create(ctx, id, "alice", "demo"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, id, "bob", "demo"); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	sess, err := s.Load(ctx, id)
	if err != nil || sess.State.Owner != "alice" {
		t.Fatalf("load: %+v %v", sess, err)
	}
	if _, err := s.Load(ctx, ids.New("s")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("load of a missing session: %v", err)
	}
}

func TestPostRecordsAndWakes(t *testing.T) {
	ctx := context.Background()
	s, id := store(), ids.New("s")
	if _, err := s.Create(ctx, id, "alice", "demo"); err != nil {
		t.Fatal(err)
	}
	msgID, err := s.Post(ctx, id, alice, "hello")
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := s.Load(ctx, id)
	if len(sess.State.Inbox) != 1 || sess.State.Inbox[0].ID != msgID || sess.State.Inbox[0].Text != "hello" {
		t.Fatalf("inbox = %+v", sess.State.Inbox)
	}
	found := false
	for range 10 {
		out, err := env.Clients().SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(env.QueueURL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if w, err := wake.Parse(aws.ToString(m.Body)); err == nil && w.Session == id && w.Reason == "message" {
				found = true
			}
		}
		if found {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !found {
		t.Fatal("no wake for the message")
	}
}

func TestIllegalAppendWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, id := store(), ids.New("s")
	st, err := s.Create(ctx, id, "alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	// A turn cannot start with nothing to answer.
	_, err = s.Append(ctx, id, st, reducer.Fact{Type: reducer.TurnStarted, Actor: alice, Turn: "t", Stream: "t"})
	if !errors.Is(err, reducer.ErrIllegal) {
		t.Fatalf("append: %v", err)
	}
	if fs, _ := s.Facts(ctx, id, 0); len(fs) != 1 {
		t.Fatalf("%d facts after an illegal append, want 1", len(fs))
	}
}

func TestCancelEndsTurnClosesStreamAndSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, id := store(), ids.New("s")
	st, _ := s.Create(ctx, id, "alice", "demo")
	st, err := s.Append(ctx, id, st, reducer.Fact{Type: reducer.MessageReceived, Actor: alice, Message: &reducer.Message{ID: "m1", Text: "go"}})
	if err != nil {
		t.Fatal(err)
	}
	turn := ids.New("turn")
	st, err = s.Append(ctx, id, st,
		reducer.Fact{Type: reducer.TurnStarted, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: turn}, Turn: turn, Stream: turn, Lease: time.Now().Add(time.Minute)},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: turn}, Turn: turn, Cause: reducer.CauseBudget})
	if err != nil {
		t.Fatal(err)
	}
	sink := s.OpenStream(id, turn)
	_ = sink.Append(parts.Part{Type: parts.Start, MessageID: turn}, parts.Part{Type: parts.DataSuspended})
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, id, alice, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	sess, err := s.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.State.Status != reducer.Idle || sess.State.Last != reducer.TurnCancelled || sess.State.Snapshot == "" {
		t.Fatalf("state after cancel = %+v", sess.State)
	}
	if len(sess.History) != 1 || sess.History[0].Content[0].Text != "go" {
		t.Fatalf("history = %+v", sess.History)
	}
	page, err := s.ReadStream(ctx, id, turn, "")
	if err != nil || page.Closed != streams.Cancelled {
		t.Fatalf("stream closed = %q, %v", page.Closed, err)
	}
	if err := s.Cancel(ctx, id, alice, ""); !errors.Is(err, session.ErrNoTurn) {
		t.Fatalf("second cancel: %v", err)
	}
	_ = st
}
