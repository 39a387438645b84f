package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// emu is the emulator the test binary shares, started on first use.
var emu = testenv.Emulator

// stack is one test's storage, so the test sees only its own sessions and
// wakes: in memory (mem), whose clock is the test's, or a table, bucket
// and wake queue of its own on the emulator (kumo's state is
// process-wide).
type stack struct {
	env      testenv.Env
	queueURL string
	mem      *teststack.Memory // nil on the emulator
}

func newStack(t testing.TB) *stack { return &stack{mem: teststack.NewMemory()} }

// newEmuStack is a stack on the emulator, for a test that polls the queue
// or writes to the table past the session store.
func newEmuStack(t testing.TB) *stack {
	t.Helper()
	e := testenv.New(t)
	return &stack{env: e, queueURL: e.QueueURL}
}

// pass moves the test's clock just past at: what waiting out a lease was.
func (s *stack) pass(at time.Time) {
	if s.mem == nil {
		time.Sleep(time.Until(at) + time.Millisecond)
		return
	}
	s.mem.Clock.Pass(at)
}

// invocation is what one Lambda invocation builds: its own clients, stores,
// runner and worker. Nothing but the test's storage is shared between
// them.
type invocation struct {
	clients  *awsenv.Clients // nil in memory
	sessions *session.Store
	runner   *turn.Runner
	worker   *worker.Worker
}

func (s *stack) fresh(agents ...*turn.Agent) *invocation {
	var cl *awsenv.Clients
	var ss *session.Store
	if s.mem != nil {
		ss = s.mem.Sessions()
	} else {
		cl = awsenv.ForEndpoint(emu().URL)
		ss = teststack.Sessions(cl, s.env)
	}
	m := turn.AgentMap{}
	for _, a := range agents {
		m[a.Name] = a
	}
	r := &turn.Runner{Sessions: ss, Agents: m, Waker: ss.Waker}
	return &invocation{clients: cl, sessions: ss, runner: r, worker: &worker.Worker{Sessions: ss, Runner: r}}
}

var script, demoAgent, count = teststack.Script, teststack.DemoAgent, teststack.Count

var alice = teststack.Alice

// newSession creates a session of agent with one waiting message, without
// sending a wake.
func newSession(t testing.TB, inv *invocation, agent, text string) string {
	t.Helper()
	return teststack.NewSession(t, inv.sessions, agent, text)
}

func post(t testing.TB, inv *invocation, id string, st reducer.State, text string) {
	t.Helper()
	teststack.Post(t, inv.sessions, id, st, text)
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
	return teststack.Receive(t, emu().Clients.SQS, s.queueURL, 0)
}

// queued is the number of messages on the queue, visible or in flight.
func (s *stack) queued(t testing.TB) int {
	t.Helper()
	return teststack.Queued(t, emu().Clients.SQS, s.queueURL)
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
