package operator_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// countStore makes the API's session store reach DynamoDB and S3 through
// counter.
func countStore(counter *awsenv.Counter) func(*operator.Config) {
	return func(c *operator.Config) {
		db := dynamo.New(awsenv.Counted(shared.URL(), counter).DynamoDB, shared.Table)
		countStreams(counter)(c)
		c.Sessions = c.Sessions.Decorate(func(session.FactLog) session.FactLog { return db }, nil)
	}
}

// approvalCounts are the reads an approval POST makes before its write,
// DynamoDB's (GetItem and Query) and S3's (GetObject), and its DynamoDB
// writes: with or without an Idempotency-Key, on a session whose facts
// start at a snapshot or not.
func approvalCounts(t *testing.T, keyed, snapshot bool) (dbReads, s3Reads, writes int64) {
	t.Helper()
	counter := &awsenv.Counter{}
	e := newEmuEnv(t, countStore(counter))
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	if snapshot {
		sess, err := e.store.Load(t.Context(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Compact(t.Context(), sess, []conversation.Message{conversation.Summary("earlier turns")},
			reducer.Compaction{Turns: 1, Messages: 2, Before: 900, After: 40}, reducer.Actor{Kind: reducer.ActorAgent, ID: turn}); err != nil {
			t.Fatal(err)
		}
	}
	ap := e.suspendForApproval(s.ID, turn)
	r := req{method: "POST", path: "/sessions/" + s.ID + "/approvals/" + ap.ID, user: alice, body: `{"decision":"approve"}`}
	if keyed {
		r.header = map[string]string{api.IdempotencyHeader: ids.New("key")}
	}
	counter.Reset()
	e.must(http.StatusAccepted, r)
	c := counter.Counts()
	return c["dynamodb:GetItem"] + c["dynamodb:Query"], c["s3:GetObject"],
		c["dynamodb:TransactWriteItems"] + c["dynamodb:PutItem"] + c["dynamodb:UpdateItem"]
}

// TestApprovalReadsOnce: an approval POST reads the session once, its
// head (whose owner the caller must be) and its facts back to the newest
// snapshot and that snapshot (which the answer is decided on), before its
// one write, with or without an Idempotency-Key: the write takes the key,
// so a first request reads no receipt. Before issue 25 it read the receipt
// first: 3 DynamoDB reads under a key, and 4 reads with a snapshot's. A
// retry is answered from the receipt (TestApprovalRetryIsAnsweredAgain).
func TestApprovalReadsOnce(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		for _, keyed := range []bool{false, true} {
			t.Run(fmt.Sprintf("keyed=%v,snapshot=%v", keyed, snapshot), func(t *testing.T) {
				db, s3, writes := approvalCounts(t, keyed, snapshot)
				t.Logf("approval POST (keyed %v, snapshot %v): %d DynamoDB reads, %d S3 reads, %d writes", keyed, snapshot, db, s3, writes)
				var wantS3 int64
				if snapshot {
					wantS3 = 1
				}
				if db > 2 || s3 > wantS3 || writes != 1 {
					t.Errorf("approval POST made %d DynamoDB and %d S3 reads and %d writes, want at most 2 and %d reads and one write", db, s3, writes, wantS3)
				}
			})
		}
	}
}

// TestApprovalRetryIsAnsweredAgain: an approval POST sent again under its
// Idempotency-Key is answered as it was, replayed, writing nothing; the
// same key with another request is a 422.
func TestApprovalRetryIsAnsweredAgain(t *testing.T) {
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	ap := e.suspendForApproval(s.ID, turn)
	key := map[string]string{api.IdempotencyHeader: ids.New("key")}
	r := req{method: "POST", path: "/sessions/" + s.ID + "/approvals/" + ap.ID, user: alice, body: `{"decision":"approve"}`, header: key}
	first := e.must(http.StatusAccepted, r)
	n := len(e.facts(s.ID))
	again := e.must(http.StatusAccepted, r)
	if string(again.body) != string(first.body) || again.header.Get(api.ReplayedHeader) != "true" || first.header.Get(api.ReplayedHeader) != "" {
		t.Fatalf("retry answered %s (replayed %q), first %s", again.body, again.header.Get(api.ReplayedHeader), first.body)
	}
	if got := len(e.facts(s.ID)); got != n {
		t.Fatalf("the retry wrote: %d facts, want %d", got, n)
	}
	r.body = `{"decision":"deny"}`
	e.must(http.StatusUnprocessableEntity, r)
}
