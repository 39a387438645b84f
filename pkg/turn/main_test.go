package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-run/baton/pkg/awsenv"
	"github.com/baton-run/baton/pkg/conversation"
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
)

const (
	table  = "turn-test-sessions"
	bucket = "turn-test-streams"
)

// env is the emulator endpoint and the queue; everything else is built
// afresh for each "invocation".
var env struct {
	url      string
	queueURL string
}

func TestMain(m *testing.M) {
	e := emulator.Start()
	env.url = e.URL
	ctx := context.Background()
	c := e.Clients
	if err := dynamo.New(c.DynamoDB, table).CreateTable(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "create table:", err)
		os.Exit(1)
	}
	if err := streams.New(c.S3, bucket).CreateBucket(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "create bucket:", err)
		os.Exit(1)
	}
	q, err := wake.CreateQueue(ctx, c.SQS, "turn-test-wakes")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create queue:", err)
		os.Exit(1)
	}
	env.queueURL = q
	code := m.Run()
	e.Close()
	os.Exit(code)
}

// invocation is everything one Lambda invocation would build: new clients,
// stores, sink values and runner. Nothing is shared with other invocations
// but the emulator.
type invocation struct {
	clients  *awsenv.Clients
	counter  *awsenv.Counter
	sessions *session.Store
	runner   *turn.Runner
}

func fresh(agent *turn.Agent) *invocation {
	c := &awsenv.Counter{}
	cl := awsenv.Counted(env.url, c)
	waker := wake.NewSQS(cl.SQS, env.queueURL)
	ss := &session.Store{
		Facts:   dynamo.New(cl.DynamoDB, table),
		Streams: streams.New(cl.S3, bucket),
		Waker:   waker,
	}
	return &invocation{clients: cl, counter: c, sessions: ss,
		runner: &turn.Runner{Sessions: ss, Agents: turn.AgentMap{agent.Name: agent}, Waker: waker}}
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

// newSession creates a session with one waiting message.
func newSession(t testing.TB, inv *invocation, text string) string {
	t.Helper()
	ctx := context.Background()
	id := ids.New("s")
	if _, err := inv.sessions.Create(ctx, id, "alice", "demo"); err != nil {
		t.Fatal(err)
	}
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	msg := reducer.Message{ID: ids.New("msg"), Text: text}
	if _, err := inv.sessions.Append(ctx, id, sess.State, reducer.Fact{Type: reducer.MessageReceived,
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, Message: &msg}); err != nil {
		t.Fatal(err)
	}
	return id
}

func facts(t testing.TB, inv *invocation, id string) []reducer.Fact {
	t.Helper()
	fs, err := inv.sessions.Facts.Facts(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func types(fs []reducer.Fact) []reducer.Type {
	out := make([]reducer.Type, len(fs))
	for i, f := range fs {
		out[i] = f.Type
	}
	return out
}

func count(fs []reducer.Fact, t reducer.Type) int {
	n := 0
	for _, f := range fs {
		if f.Type == t {
			n++
		}
	}
	return n
}

// parts reads a whole stream back.
func parts(t testing.TB, inv *invocation, id, stream string) ([]streams.Part, streams.Status) {
	t.Helper()
	page, err := inv.sessions.Streams.Read(context.Background(), id, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]streams.Part, len(page.Entries))
	for i, e := range page.Entries {
		out[i] = e.Part
	}
	return out, page.Closed
}

// transcript is the model input the session's durable state rebuilds: the
// history of ended turns (from the snapshot) plus the open turn, if any.
func transcript(t testing.TB, inv *invocation, id string) []byte {
	t.Helper()
	sess, err := inv.sessions.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	msgs := sess.History
	if tr := sess.State.Turn; tr != nil {
		ps, _ := parts(t, inv, id, tr.Stream)
		msgs = conversation.Build(sess.History, tr.Messages, conversation.Replay(ps))
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// content drops the parts that only mark suspension and resumption, and the
// turn id in start, so two runs of one script compare equal.
var turnInID = regexp.MustCompile(`tc_[0-9a-f]+_`)

func content(ps []streams.Part) []streams.Part {
	var out []streams.Part
	for _, p := range ps {
		if p.Marker() {
			continue
		}
		if p.Type == streams.Start {
			p.MessageID = ""
		}
		// Baton's call ids name the turn; the rest of each is the same.
		p.ToolCallID = turnInID.ReplaceAllString(p.ToolCallID, "tc_")
		p.ApprovalID = turnInID.ReplaceAllString(p.ApprovalID, "tc_")
		out = append(out, p)
	}
	return out
}

// mergeDeltas joins consecutive text deltas, which chunking coalesces
// differently depending on where flushes fell.
func mergeDeltas(ps []streams.Part) []streams.Part {
	var out []streams.Part
	for _, p := range ps {
		if n := len(out); n > 0 && (p.Type == streams.TextDelta || p.Type == streams.ReasoningDelta) &&
			out[n-1].Type == p.Type && out[n-1].ID == p.ID {
			out[n-1].Delta += p.Delta
			continue
		}
		out = append(out, p)
	}
	return out
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// queued counts the wakes visible on the queue without consuming them.
func queued(t testing.TB, inv *invocation) int {
	t.Helper()
	out, err := inv.clients.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(env.queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	return n
}
