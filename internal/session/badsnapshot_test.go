package session_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestLoadRefusesCorruptSnapshots ends a turn, so that its snapshot is
// written, then replaces the snapshot object with bodies End never writes:
// Load refuses each with a clear error instead of rebuilding a wrong state
// (a running session without a turn would panic the first head write).
func TestLoadRefusesCorruptSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, id := store(), ids.New("s")
	st, err := s.Create(ctx, id, "alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	turn := ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	if _, err = s.Append(ctx, id, st,
		reducer.Fact{Type: reducer.MessageReceived, Actor: alice, Message: &reducer.Message{ID: "m1", Text: "go"}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(time.Minute)},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseBudget},
	); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, id, alice, "stop"); err != nil {
		t.Fatal(err)
	}
	good, err := s.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	key := good.State.Snapshot
	out, err := env.Clients().S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	for name, c := range map[string]struct {
		body    string
		corrupt bool // the error matches ErrCorruptSnapshot, not just a decoding error
	}{
		"running without a turn": {strings.Replace(body, `"status":"idle"`, `"status":"running"`, 1), true},
		"another session":        {strings.Replace(body, `"session":"`+id, `"session":"s_other`, 1), true},
		"unknown role":           {strings.Replace(body, `"role":"user"`, `"role":"system"`, 1), true},
		"no agent":               {strings.Replace(body, `"agent":"demo"`, `"agent":""`, 1), true},
		"null":                   {`null`, true},
		"truncated":              {body[:len(body)/2], false},
	} {
		if c.body == body {
			t.Fatalf("%s: the mutation changed nothing", name)
		}
		if _, err := env.Clients().S3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(env.Bucket), Key: aws.String(key), Body: strings.NewReader(c.body),
		}); err != nil {
			t.Fatal(err)
		}
		sess, err := s.Load(ctx, id)
		if err == nil || (c.corrupt && !errors.Is(err, session.ErrCorruptSnapshot)) {
			t.Errorf("%s: Load = %+v, %v; want a corrupt-snapshot error", name, sess, err)
		}
	}
}
