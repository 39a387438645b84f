package tick_test

import (
	"context"
	"encoding/json"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/turn"
)

// stack is one test's storage: in memory (mem), or a table, bucket and
// wake queue of its own on the emulator (kumo's state is process-wide, and
// the tick sweeps a whole table). mem's clock is the test's clock, which
// the tick reads through the session store.
type stack struct {
	testenv.Env
	mem *teststack.Memory // nil on the emulator
}

func newStack(t testing.TB) *stack { return &stack{mem: teststack.NewMemory()} }

// newEmuStack is a stack on the emulator, for a test that counts requests
// or reads the table or bucket past the session store.
func newEmuStack(t testing.TB) *stack { return &stack{Env: testenv.New(t)} }

// pass moves the test's clock just past at: what waiting out a lease was.
func (s *stack) pass(at time.Time) {
	if s.mem == nil {
		time.Sleep(time.Until(at) + time.Millisecond)
		return
	}
	s.mem.Clock.Pass(at)
}

// invocation is what one Lambda invocation builds, tick or resume: its own
// clients and stores. Nothing but the test's storage is shared between
// them.
type invocation struct {
	clients  *awsenv.Clients // nil in memory
	counter  *awsenv.Counter // nil in memory
	sessions *session.Store
	runner   *turn.Runner
	worker   *worker.Worker
	tick     *tick.Tick
}

func (s *stack) fresh(agent *turn.Agent) *invocation {
	inv := &invocation{}
	if s.mem != nil {
		inv.sessions = s.mem.Sessions()
	} else {
		inv.counter = &awsenv.Counter{}
		inv.clients = awsenv.Counted(s.URL(), inv.counter)
		inv.sessions = teststack.Sessions(inv.clients, s.Env)
	}
	ss := inv.sessions
	inv.tick = &tick.Tick{Sessions: ss, Waker: ss.Waker}
	if agent != nil {
		inv.runner = &turn.Runner{Sessions: ss, Agents: turn.AgentMap{agent.Name: agent}, Waker: ss.Waker}
		inv.worker = &worker.Worker{Sessions: ss, Runner: inv.runner}
	}
	return inv
}

var script, demoAgent, count = teststack.Script, teststack.DemoAgent, teststack.Count

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

var alice = teststack.Alice

// newSession creates a session with one waiting message, sending no wake.
func newSession(t testing.TB, inv *invocation, text string) string {
	t.Helper()
	return teststack.NewSession(t, inv.sessions, "demo", text)
}

// readParts reads a whole stream back.
func readParts(t testing.TB, inv *invocation, id, stream string) []parts.Part {
	t.Helper()
	ps, _, err := teststack.Parts(context.Background(), inv.sessions, id, stream)
	if err != nil {
		t.Fatal(err)
	}
	return ps
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
		msgs = conversation.Build(sess.History, tr.Messages, conversation.Replay(readParts(t, inv, id, tr.Stream)))
	}
	return msgs
}

// receive takes the wakes now visible on the queue, deleting them.
func (s *stack) receive(t testing.TB) []wake.Wake {
	t.Helper()
	if s.mem != nil {
		var out []wake.Wake
		for _, w := range s.mem.Wakes.TakeDue() {
			out = append(out, w.Wake)
		}
		return out
	}
	return teststack.Receive(t, s.Clients().SQS, s.QueueURL, 0)
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
