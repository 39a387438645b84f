package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/claims/claimsdb"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// blockedTurn makes session id's turn suspended as blocked on claim c, its
// request queued in the broker as the runner would have left it.
func blockedTurn(t *testing.T, s *session.Store, b *claimsdb.Broker, id string, c claims.Claim) {
	t.Helper()
	ctx := t.Context()
	st, err := s.Create(ctx, id, "alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	turn, call := ids.New("turn"), ids.New("tc")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	req := claims.Request{ID: claims.GrantID(id, call), Owner: "alice", Session: id, Turn: turn, ToolCall: call, Claims: []claims.Claim{c}}
	adm, err := b.Acquire(ctx, req)
	if err != nil || adm.Outcome != claims.Blocked {
		t.Fatalf("%s: %+v %v, want blocked", id, adm, err)
	}
	block := claims.Block{ToolCallID: call, Tool: "refund", Claims: req.Claims, Outcome: adm.Outcome, Blockers: adm.Blockers, Ahead: adm.Ahead}
	if _, err := s.Append(ctx, id, st,
		reducer.Fact{Type: reducer.MessageReceived, Actor: alice, Message: &reducer.Message{ID: "m1", Text: "refund o1"}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(time.Minute)},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseBlocked, Block: &block},
	); err != nil {
		t.Fatal(err)
	}
	sink := s.OpenStream(id, turn)
	_ = sink.Append(parts.Part{Type: parts.Start, MessageID: turn}, parts.Part{Type: parts.DataSuspended})
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// Ending a turn blocked on claims withdraws its waiter, whoever ends it (a
// cancel, a message that interrupts it), and wakes the session that waited
// behind it and is now free. The broker's clock stands still, so no waiter
// leaves by its TTL.
func TestEndingABlockedTurnWithdrawsItsWaiter(t *testing.T) {
	for _, how := range []string{"cancel", "interrupt"} {
		t.Run(how, func(t *testing.T) {
			ctx := t.Context()
			c := env.Clients()
			q, err := c.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(ids.New("withdraw"))})
			if err != nil {
				t.Fatal(err)
			}
			s := store()
			s.Waker = wake.NewSQS(c.SQS, aws.ToString(q.QueueUrl))
			s.Steering = func(string) reducer.Steering { return reducer.SteerInterrupt }
			b := claimsdb.New(c.DynamoDB, env.Table)
			frozen := time.Now()
			b.Clock = func() time.Time { return frozen }
			s.Claims = b
			ns := "withdraw" + ids.New("n")
			order := claims.Claim{Namespace: ns, Key: "o1", Access: claims.Write}
			holder := claims.Grant{ID: "holder", Owner: "alice", Session: ids.New("s"), Claims: []claims.Claim{order}}
			if adm, err := b.Acquire(ctx, claims.Request{ID: holder.ID, Owner: holder.Owner, Session: holder.Session, Claims: holder.Claims}); err != nil || adm.Outcome != claims.Granted {
				t.Fatalf("holder: %+v %v", adm, err)
			}
			first, second := ids.New("s"), ids.New("s")
			blockedTurn(t, s, b, first, order)
			blockedTurn(t, s, b, second, order)
			if ready, err := b.Release(ctx, holder); err != nil || len(ready) != 1 || ready[0].Session != first {
				t.Fatalf("release: ready %+v %v, want the first waiter only", ready, err)
			}
			switch how {
			case "cancel":
				err = s.Cancel(ctx, first, alice, "stop")
			case "interrupt":
				_, err = s.Post(ctx, first, alice, "stop, do something else")
			}
			if err != nil {
				t.Fatal(err)
			}
			if sess, err := s.Load(ctx, first); err != nil || sess.State.Turn != nil {
				t.Fatalf("the first turn is still open: %+v %v", sess, err)
			}
			if _, ws, err := b.Grants(ctx, claims.SpaceKey{Owner: "alice", Namespace: ns}); err != nil || len(ws) != 1 || ws[0].Session != second {
				t.Fatalf("queue %+v %v, want only the second waiter", ws, err)
			}
			if !woken(ctx, t, aws.ToString(q.QueueUrl), second, wake.Released) {
				t.Fatal("the second session was not woken")
			}
		})
	}
}

// woken reports whether the queue holds a wake of session for reason.
func woken(ctx context.Context, t *testing.T, queue, session string, reason wake.Reason) bool {
	t.Helper()
	for range 20 {
		out, err := env.Clients().SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if w, err := wake.Parse(aws.ToString(m.Body)); err == nil && w.Session == session && w.Reason == reason {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
