package operator_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/session"
)

// countFacts makes the API's session store reach DynamoDB through counter.
func countFacts(counter *awsenv.Counter) func(*operator.Config) {
	return func(c *operator.Config) {
		db := dynamo.New(awsenv.Counted(shared.URL(), counter).DynamoDB, shared.Table)
		c.Sessions = c.Sessions.Decorate(func(session.FactLog) session.FactLog { return db }, nil)
	}
}

// approvalReads are the DynamoDB reads (GetItem and Query) an approval
// POST makes, with and without an Idempotency-Key, and its writes.
func approvalReads(t *testing.T, keyed bool) (reads, writes int64) {
	t.Helper()
	counter := &awsenv.Counter{}
	e := newEnv(t, countFacts(counter))
	alice := ids.New("alice")
	s := e.create(alice)
	turn, _ := e.startTurn(s.ID)
	ap := e.suspendForApproval(s.ID, turn)
	r := req{method: "POST", path: "/sessions/" + s.ID + "/approvals/" + ap.ID, user: alice, body: `{"decision":"approve"}`}
	if keyed {
		r.header = map[string]string{"Idempotency-Key": ids.New("key")}
	}
	counter.Reset()
	e.must(http.StatusAccepted, r)
	c := counter.Counts()
	return c["dynamodb:GetItem"] + c["dynamodb:Query"], c["dynamodb:TransactWriteItems"] + c["dynamodb:PutItem"] + c["dynamodb:UpdateItem"]
}

// TestApprovalReadsOnce: an approval POST reads the session once, its
// head (whose owner the caller must be) and its facts (which the answer is
// decided on), before its one write, with or without an Idempotency-Key:
// the write takes the key, so a first request reads no receipt (before
// issue 25 it read it first: 3 reads). A retry is answered from the
// receipt (see TestApprovalRetryIsAnsweredAgain).
func TestApprovalReadsOnce(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			reads, writes := approvalReads(t, keyed)
			t.Logf("approval POST (keyed %v): %d DynamoDB reads, %d writes", keyed, reads, writes)
			const want = 2
			if reads > want || writes != 1 {
				t.Errorf("approval POST made %d reads and %d writes, want at most %d reads and one write", reads, writes, want)
			}
		})
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
	key := map[string]string{"Idempotency-Key": ids.New("key")}
	r := req{method: "POST", path: "/sessions/" + s.ID + "/approvals/" + ap.ID, user: alice, body: `{"decision":"approve"}`, header: key}
	first := e.must(http.StatusAccepted, r)
	n := len(e.facts(s.ID))
	again := e.must(http.StatusAccepted, r)
	if string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry answered %s (replayed %q), first %s", again.body, again.header.Get("Idempotent-Replayed"), first.body)
	}
	if got := len(e.facts(s.ID)); got != n {
		t.Fatalf("the retry wrote: %d facts, want %d", got, n)
	}
	r.body = `{"decision":"deny"}`
	e.must(http.StatusUnprocessableEntity, r)
}
