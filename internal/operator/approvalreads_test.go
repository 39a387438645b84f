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
	t.Logf("counts: %v", c)
	return c["dynamodb:GetItem"] + c["dynamodb:Query"], c["dynamodb:TransactWriteItems"] + c["dynamodb:PutItem"] + c["dynamodb:UpdateItem"]
}

// TestApprovalReadsOnce: an approval POST reads the session once (its
// head and its facts, which the answer is decided on) and, under an
// Idempotency-Key, the key's receipt, before its one write.
func TestApprovalReadsOnce(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			reads, writes := approvalReads(t, keyed)
			t.Logf("approval POST (keyed %v): %d DynamoDB reads, %d writes", keyed, reads, writes)
			want := int64(2)
			if keyed {
				want = 3
			}
			if reads > want || writes != 1 {
				t.Errorf("approval POST made %d reads and %d writes, want at most %d reads and one write", reads, writes, want)
			}
		})
	}
}
