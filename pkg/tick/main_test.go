package tick_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-run/baton/pkg/awsenv"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/dynamo"
	"github.com/baton-run/baton/pkg/emulator"
	"github.com/baton-run/baton/pkg/ids"
	"github.com/baton-run/baton/pkg/model"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/session"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/tick"
	"github.com/baton-run/baton/pkg/tool"
	"github.com/baton-run/baton/pkg/turn"
	"github.com/baton-run/baton/pkg/wake"
	"github.com/baton-run/baton/pkg/worker"
)

const bucket = "tick-test-streams"

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
// and the tick sweeps a whole table, so each test makes its own.
type stack struct {
	table    string
	queueURL string
}

func newStack(t testing.TB) *stack {
	t.Helper()
	ctx := context.Background()
	s := &stack{table: ids.New("sessions")}
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

// invocation is what one Lambda invocation builds, tick or resume: its own
// clients and stores. Nothing but the emulator is shared between them.
type invocation struct {
	clients  *awsenv.Clients
	counter  *awsenv.Counter
	sessions *session.Store
	runner   *turn.Runner
	worker   *worker.Worker
	tick     *tick.Tick
}

func (s *stack) fresh(agent *turn.Agent) *invocation {
	c := &awsenv.Counter{}
	cl := awsenv.Counted(emu.URL, c)
	waker := wake.NewSQS(cl.SQS, s.queueURL)
	ss := &session.Store{Facts: dynamo.New(cl.DynamoDB, s.table), Streams: streams.New(cl.S3, bucket), Waker: waker}
	inv := &invocation{clients: cl, counter: c, sessions: ss, tick: &tick.Tick{Sessions: ss, Waker: waker}}
	if agent != nil {
		inv.runner = &turn.Runner{Sessions: ss, Agents: turn.AgentMap{agent.Name: agent}, Waker: waker}
		inv.worker = &worker.Worker{Sessions: ss, Runner: inv.runner}
	}
	return inv
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

// recorder is a model that remembers every request it was given.
type recorder struct {
	model.Model
	mu   sync.Mutex
	reqs []model.Request
}

func (r *recorder) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Model.Stream(ctx, req)
}

func (r *recorder) requests() []model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]model.Request(nil), r.reqs...)
}

var alice = reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}

// newSession creates a session with one waiting message, sending no wake.
func newSession(t testing.TB, inv *invocation, text string) string {
	t.Helper()
	ctx := context.Background()
	id := ids.New("s")
	st, err := inv.sessions.Create(ctx, id, "alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	msg := reducer.Message{ID: ids.New("msg"), Text: text}
	if _, err := inv.sessions.Append(ctx, id, st, reducer.Fact{Type: reducer.MessageReceived, Actor: alice, Message: &msg}); err != nil {
		t.Fatal(err)
	}
	return id
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

// parts reads a whole stream back.
func parts(t testing.TB, inv *invocation, id, stream string) []streams.Part {
	t.Helper()
	page, err := inv.sessions.Streams.Read(context.Background(), id, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]streams.Part, len(page.Entries))
	for i, e := range page.Entries {
		out[i] = e.Part
	}
	return out
}

// transcript is the model input the session's durable state rebuilds.
func transcript(t testing.TB, inv *invocation, id string) []conversation.Message {
	t.Helper()
	sess, err := inv.sessions.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	msgs := sess.History
	if tr := sess.State.Turn; tr != nil {
		msgs = conversation.Build(sess.History, tr.Messages, conversation.Replay(parts(t, inv, id, tr.Stream)))
	}
	return msgs
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

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// at is a clock fixed at now plus d.
func at(d time.Duration) func() time.Time {
	t := time.Now().Add(d)
	return func() time.Time { return t }
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
