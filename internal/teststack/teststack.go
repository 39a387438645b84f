package teststack

import (
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// TB is the part of testing.TB the package uses.
type TB = testenv.TB

// Sessions is a session store on e's table, bucket and wake queue, whose
// requests go through c (counted, faulted or plain, as the test needs).
func Sessions(c *awsenv.Clients, e testenv.Env) *session.Store {
	ss := session.New(dynamo.New(c.DynamoDB, e.Table), streams.New(c.S3, e.Bucket))
	ss.Waker = wake.NewSQS(c.SQS, e.QueueURL)
	return ss
}

// Script parses a scripted model (see model.ParseScript).
func Script(tb TB, js string) *model.Scripted {
	tb.Helper()
	m, err := model.ParseScript([]byte(js))
	if err != nil {
		tb.Fatalf("teststack: script: %v", err)
	}
	return m
}

// DemoAgent is the agent "demo": the demo tools (get_weather reads,
// send_email needs approval) on m, within lim.
func DemoAgent(tb TB, m model.Model, lim turn.Limits) *turn.Agent {
	tb.Helper()
	reg, err := tool.NewRegistry(tool.Demo()...)
	if err != nil {
		tb.Fatalf("teststack: %v", err)
	}
	return &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024, Limits: lim}
}

// Alice is the operator who owns the sessions NewSession creates.
var Alice = reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}

// NewSession creates a session of agent, owned by Alice, with one waiting
// message; it sends no wake.
func NewSession(tb TB, ss *session.Store, agent, text string) string {
	tb.Helper()
	id := ids.New("s")
	st, err := ss.Create(context.Background(), id, Alice.ID, agent)
	if err != nil {
		tb.Fatalf("teststack: create session: %v", err)
	}
	Post(tb, ss, id, st, text)
	return id
}

// Post appends a message from Alice to the session in state st.
func Post(tb TB, ss *session.Store, id string, st reducer.State, text string) {
	tb.Helper()
	msg := reducer.Message{ID: ids.New("msg"), Text: text}
	if _, err := ss.Append(context.Background(), id, st, reducer.Fact{Type: reducer.MessageReceived, Actor: Alice, Message: &msg}); err != nil {
		tb.Fatalf("teststack: post: %v", err)
	}
}

// Load is the session's state.
func Load(tb TB, ss *session.Store, id string) reducer.State {
	tb.Helper()
	sess, err := ss.Load(context.Background(), id)
	if err != nil {
		tb.Fatalf("teststack: load: %v", err)
	}
	return sess.State
}

// Facts are all of the session's facts.
func Facts(tb TB, ss *session.Store, id string) []reducer.Fact {
	tb.Helper()
	fs, err := ss.Facts(context.Background(), id, 0)
	if err != nil {
		tb.Fatalf("teststack: facts: %v", err)
	}
	return fs
}

// Count is how many of fs are of type typ.
func Count(fs []reducer.Fact, typ reducer.Type) int {
	n := 0
	for _, f := range fs {
		if f.Type == typ {
			n++
		}
	}
	return n
}

// Parts reads a whole stream back, with its status.
func Parts(ctx context.Context, ss *session.Store, id, stream string) ([]parts.Part, streams.Status, error) {
	page, err := ss.ReadStream(ctx, id, stream, "")
	if err != nil {
		return nil, "", err
	}
	out := make([]parts.Part, len(page.Entries))
	for i, e := range page.Entries {
		out[i] = e.Part
	}
	return out, page.Closed, nil
}

// Receive takes the wakes on the queue, deleting them: it waits up to wait
// seconds for the first and takes what is visible after that.
func Receive(tb TB, c *sqs.Client, queueURL string, wait int32) []wake.Wake {
	tb.Helper()
	ctx := context.Background()
	var out []wake.Wake
	for ; ; wait = 0 {
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: wait})
		if err != nil {
			tb.Fatalf("teststack: receive: %v", err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			w, err := wake.Parse(aws.ToString(m.Body))
			if err != nil {
				tb.Fatalf("teststack: wake %q: %v", aws.ToString(m.Body), err)
			}
			out = append(out, w)
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				tb.Fatalf("teststack: delete: %v", err)
			}
		}
	}
}

// Visible counts the wakes visible on the queue without consuming them.
func Visible(tb TB, c *sqs.Client, queueURL string) int {
	tb.Helper()
	return queueCount(tb, c, queueURL, sqstypes.QueueAttributeNameApproximateNumberOfMessages)
}

// Queued counts the messages on the queue: visible, in flight or delayed.
func Queued(tb TB, c *sqs.Client, queueURL string) int {
	tb.Helper()
	return queueCount(tb, c, queueURL,
		sqstypes.QueueAttributeNameApproximateNumberOfMessages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)
}

func queueCount(tb TB, c *sqs.Client, queueURL string, names ...sqstypes.QueueAttributeName) int {
	tb.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: names})
	if err != nil {
		tb.Fatalf("teststack: queue attributes: %v", err)
	}
	n := 0
	for _, name := range names {
		v, ok := out.Attributes[string(name)]
		if !ok {
			continue // an emulator may leave out a count of zero
		}
		k, err := strconv.Atoi(v)
		if err != nil {
			tb.Fatalf("teststack: queue attribute %s = %q", name, v)
		}
		n += k
	}
	return n
}
