package worker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/pkg/awsenv"
	"github.com/baton-run/baton/pkg/dynamo"
	"github.com/baton-run/baton/pkg/emulator"
	"github.com/baton-run/baton/pkg/ids"
	"github.com/baton-run/baton/pkg/model"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/session"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/tool"
	"github.com/baton-run/baton/pkg/turn"
	"github.com/baton-run/baton/pkg/wake"
	"github.com/baton-run/baton/pkg/worker"
)

const bucket = "worker-test-streams"

var emu *emulator.Emulator

func TestMain(m *testing.M) {
	emu = emulator.Start()
	if err := streams.New(emu.Clients.S3, bucket).CreateBucket(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "create bucket:", err)
		os.Exit(1)
	}
	code := m.Run()
	emu.Close()
	os.Exit(code)
}

// stack is one test's table and wake queue. kumo's state is process-wide,
// so each test makes its own and sees only its own sessions and wakes.
type stack struct {
	t        testing.TB
	table    string
	queueURL string
}

func newStack(t testing.TB) *stack {
	t.Helper()
	ctx := context.Background()
	s := &stack{t: t, table: ids.New("sessions")}
	if err := dynamo.New(emu.Clients.DynamoDB, s.table).CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	q, err := wake.CreateQueue(ctx, emu.Clients.SQS, ids.New("wakes"))
	if err != nil {
		t.Fatal(err)
	}
	s.queueURL = q
	return s
}

// invocation is what one Lambda invocation builds: its own clients, stores,
// runner and worker. Nothing but the emulator is shared between them.
type invocation struct {
	clients  *awsenv.Clients
	sessions *session.Store
	runner   *turn.Runner
	worker   *worker.Worker
}

func (s *stack) fresh(agents ...*turn.Agent) *invocation {
	cl := awsenv.ForEndpoint(emu.URL)
	waker := wake.NewSQS(cl.SQS, s.queueURL)
	ss := &session.Store{Facts: dynamo.New(cl.DynamoDB, s.table), Streams: streams.New(cl.S3, bucket), Waker: waker}
	m := turn.AgentMap{}
	for _, a := range agents {
		m[a.Name] = a
	}
	r := &turn.Runner{Sessions: ss, Agents: m, Waker: waker}
	return &invocation{clients: cl, sessions: ss, runner: r, worker: &worker.Worker{Sessions: ss, Runner: r}}
}

func script(t testing.TB, js string) *model.Scripted {
	t.Helper()
	m, err := model.ParseScript([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func demoAgent(t testing.TB, m model.Model, lim turn.Limits) *turn.Agent {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Demo()...)
	if err != nil {
		t.Fatal(err)
	}
	return &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024, Limits: lim}
}

var alice = reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}

// newSession creates a session of agent with one waiting message, without
// sending a wake.
func newSession(t testing.TB, inv *invocation, agent, text string) string {
	t.Helper()
	ctx := context.Background()
	id := ids.New("s")
	st, err := inv.sessions.Create(ctx, id, "alice", agent)
	if err != nil {
		t.Fatal(err)
	}
	post(t, inv, id, st, text)
	return id
}

func post(t testing.TB, inv *invocation, id string, st reducer.State, text string) {
	t.Helper()
	msg := reducer.Message{ID: ids.New("msg"), Text: text}
	if _, err := inv.sessions.Append(context.Background(), id, st, reducer.Fact{Type: reducer.MessageReceived, Actor: alice, Message: &msg}); err != nil {
		t.Fatal(err)
	}
}

func load(t testing.TB, inv *invocation, id string) reducer.State {
	t.Helper()
	sess, err := inv.sessions.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sess.State
}

func facts(t testing.TB, inv *invocation, id string) []reducer.Fact {
	t.Helper()
	fs, err := inv.sessions.Facts.Facts(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func count(fs []reducer.Fact, typ reducer.Type) int {
	n := 0
	for _, f := range fs {
		if f.Type == typ {
			n++
		}
	}
	return n
}

// receive takes the wakes now visible on the queue, deleting them.
func (s *stack) receive(t testing.TB) []wake.Wake {
	t.Helper()
	ctx := context.Background()
	var out []wake.Wake
	for {
		r, err := emu.Clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(s.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			w, err := wake.Parse(aws.ToString(m.Body))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, w)
			if _, err := emu.Clients.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// queued is the number of messages on the queue, visible or in flight.
func (s *stack) queued(t testing.TB) int {
	t.Helper()
	out, err := emu.Clients.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		var k int
		fmt.Sscan(v, &k)
		n += k
	}
	return n
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
