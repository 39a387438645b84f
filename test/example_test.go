package test

// The example program's own resume bootstrap, built by the harness and run
// as a process against kumo's Lambda Runtime API, runs a turn with its Go
// refund tool and its CRM's MCP tools. This is what deploying
// examples/supportdesk runs.

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/examples/supportdesk"
	"github.com/baton-run/baton/examples/supportdesk/crm"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/test/harness"
)

// TestExampleResumeBootstrapRunsItsGoTool: the support desk's resume
// function takes the wake of a posted message, looks the order up, reads
// the customer over MCP and suspends for the refund's approval (250 is over
// the limit); the wake of the approval makes it refund through the ledger,
// note it in the CRM and complete.
func TestExampleResumeBootstrapRunsItsGoTool(t *testing.T) {
	t.Parallel()
	e := kumo(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	boot, err := harness.BuildBootstrap(ctx, "./examples/supportdesk/functions/resume", dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(boot); err == nil {
		t.Logf("example resume bootstrap (host build): %d bytes", fi.Size())
	}
	name := strings.ToLower(ids.New("example"))
	res, err := provision.Provision(ctx, e.Clients, baton.Template(), provision.Names{Table: name, Bucket: name, Queue: name})
	if err != nil {
		t.Fatal(err)
	}
	desk := crm.New()
	crmSrv := httptest.NewServer(desk.Handler())
	defer crmSrv.Close()

	var out logBuffer
	fn, err := harness.StartFunction(ctx, e.URL, name+"-resume", boot, map[string]string{
		"BATON_TABLE": res.Table, "BATON_BUCKET": res.Bucket, "BATON_QUEUE_URL": res.QueueURL, "LOG_FORMAT": "json",
		supportdesk.EnvModel: "script:" + supportdesk.DemoScript,
		supportdesk.EnvCRM:   crmSrv.URL,
	}, harness.WithTimeout(resumeTimeout), harness.WithOutput(&out))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fn.Stop() }()
	defer func() {
		if t.Failed() {
			t.Logf("--- resume output ---\n%s", out.String())
		}
	}()

	store := session.New(dynamo.New(e.Clients.DynamoDB, res.Table), streams.New(e.Clients.S3, res.Bucket))
	store.Waker = wake.NewSQS(e.Clients.SQS, res.QueueURL)
	id := ids.New("s")
	if _, err := store.Create(ctx, id, alice, "desk"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Post(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: alice}, "My headphones (A-1002) broke."); err != nil {
		t.Fatal(err)
	}
	deliverWake(t, ctx, e.Clients.SQS, res.QueueURL, fn)
	sess, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st := sess.State
	if st.Status != reducer.Suspended || st.Turn == nil || len(st.Turn.Pending) != 1 || st.Turn.Pending[0].Tool != "refund" {
		t.Fatalf("after the first invocation: %s, want suspended for the refund's approval", summary(exampleFacts(t, store, id)))
	}

	if err := store.Answer(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "bob"}, reducer.Answer{ApprovalID: st.Turn.Pending[0].ID, Decision: reducer.Approve, Reason: ""}); err != nil {
		t.Fatal(err)
	}
	deliverWake(t, ctx, e.Clients.SQS, res.QueueURL, fn)
	fs := exampleFacts(t, store, id)
	if last := fs[len(fs)-1]; last.Type != reducer.TurnCompleted {
		t.Fatalf("after the approval: %s, want turn.completed", summary(fs))
	}
	var executed []string
	for _, f := range ofType(fs, reducer.ExecutionStarted) {
		executed = append(executed, f.Execution.Tool)
	}
	if strings.Join(executed, ",") != "refund,add_note" {
		t.Fatalf("executions %v, want refund, add_note", executed)
	}
	page, err := store.ReadStream(ctx, id, fs[2].Stream, "")
	if err != nil {
		t.Fatal(err)
	}
	var refunded bool
	for _, en := range page.Entries {
		p := en.Part
		if p.Type == parts.ToolOutputAvailable && string(p.Output) == `{"order":"A-1002","amount":250,"left":0}` {
			refunded = true
		}
	}
	if !refunded {
		t.Fatal("no refund output in the turn's stream")
	}
	if n := desk.Notes("ben@example.com"); len(n) != 1 {
		t.Fatalf("CRM notes %v", n)
	}
}

// deliverWake takes the one wake on the queue and invokes fn with it as an
// SQS event, as the event source mapping would; the batch must succeed.
func deliverWake(t *testing.T, ctx context.Context, c *sqs.Client, queueURL string, fn *harness.Function) {
	t.Helper()
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 1, WaitTimeSeconds: 2,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive a wake: %v, %d messages", err, len(got.Messages))
	}
	ev := wake.Event(got.Messages, attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], c.Options().Region)
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := fn.Invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(raw, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resume answered %s (%v), want no failures", raw, err)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: got.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
}

func exampleFacts(t *testing.T, s *session.Store, id string) []reducer.Fact {
	t.Helper()
	fs, err := s.Facts(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
