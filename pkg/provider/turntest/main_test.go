package turntest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

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
)

const (
	table  = "turntest-sessions"
	bucket = "turntest-streams"
)

// env is the emulator endpoint and the wake queue; everything else is built
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
	q, err := wake.CreateQueue(ctx, c.SQS, "turntest-wakes")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create queue:", err)
		os.Exit(1)
	}
	env.queueURL = q
	code := m.Run()
	e.Close()
	os.Exit(code)
}

// invocation is what one Lambda invocation builds: new AWS clients, stores
// and runner. Nothing is shared with other invocations but the emulator.
type invocation struct {
	sessions *session.Store
	runner   *turn.Runner
}

func fresh(agent *turn.Agent) *invocation {
	cl := awsenv.Counted(env.url, &awsenv.Counter{})
	waker := wake.NewSQS(cl.SQS, env.queueURL)
	ss := &session.Store{
		Facts:   dynamo.New(cl.DynamoDB, table),
		Streams: streams.New(cl.S3, bucket),
		Waker:   waker,
	}
	inv := &invocation{sessions: ss}
	if agent != nil {
		inv.runner = &turn.Runner{Sessions: ss, Agents: turn.AgentMap{agent.Name: agent}, Waker: waker}
	}
	return inv
}

// System is the agent's system prompt; every request must carry it.
const System = "You are a test agent. Use the tools; emails need an operator's approval."

// MaxTokens is the agent's per-step output cap.
const MaxTokens = 4096

// demoAgent is the demo tools (get_weather reads, send_email needs
// approval) on m.
func demoAgent(t testing.TB, m model.Model) *turn.Agent {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Demo()...)
	if err != nil {
		t.Fatal(err)
	}
	return &turn.Agent{Name: "demo", System: System, Model: m, Tools: reg, MaxTokens: MaxTokens}
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

// readParts reads a whole stream back.
func readParts(ctx context.Context, inv *invocation, id, stream string) ([]streams.Part, streams.Status, error) {
	page, err := inv.sessions.Streams.Read(ctx, id, stream, "")
	if err != nil {
		return nil, "", err
	}
	out := make([]streams.Part, len(page.Entries))
	for i, e := range page.Entries {
		out[i] = e.Part
	}
	return out, page.Closed, nil
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

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
