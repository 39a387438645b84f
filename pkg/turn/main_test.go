package turn_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// env is the package's table, bucket and wake queue; everything else is
// built afresh for each "invocation".
var env testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// invocation is everything one Lambda invocation would build: new
// clients, stores, sink values and runner. Nothing is shared with other
// invocations but the test's storage: in memory, or the emulator.
type invocation struct {
	clients  *awsenv.Clients // nil in memory
	counter  *awsenv.Counter // nil in memory
	sessions *session.Store
	runner   *turn.Runner
}

// stack is one test's storage: in memory (mem) unless the test asked for
// the emulator (onEmulator); mem's clock is the test's clock either way.
type stack struct {
	mem *teststack.Memory
	emu atomic.Bool
}

// stacks holds each test's stack, by the name of its top-level test, so
// subtests share it, until the test that made it ends (a test run again,
// -count, gets a fresh one).
var stacks sync.Map

func stackOf(t testing.TB) *stack {
	name, _, _ := strings.Cut(t.Name(), "/")
	s, loaded := stacks.LoadOrStore(name, &stack{mem: teststack.NewMemory()})
	if !loaded {
		t.Cleanup(func() { stacks.Delete(name) })
	}
	return s.(*stack)
}

// onEmulator puts the test's invocations on the emulator's table, bucket
// and queue, for a test that counts requests, injects faults into them or
// reads the wake queue. Call it before the test's first fresh.
func onEmulator(t testing.TB) { stackOf(t).emu.Store(true) }

// pass moves the test's clock just past at: what waiting out a lease or an
// expiry was.
func pass(t testing.TB, at time.Time) { stackOf(t).mem.Clock.Pass(at) }

// wait lets d pass: on the test's clock in memory, where the wake queue
// reads it too; on the wall clock on the emulator, whose queue delays wakes
// by it.
func wait(t testing.TB, d time.Duration) {
	if st := stackOf(t); !st.emu.Load() {
		st.mem.Clock.Advance(d)
		return
	}
	time.Sleep(d)
}

// fresh is a new invocation on the test's storage.
func fresh(t testing.TB, agent *turn.Agent) *invocation {
	st := stackOf(t)
	inv := &invocation{}
	if st.emu.Load() {
		inv.counter = &awsenv.Counter{}
		inv.clients = awsenv.Counted(env.URL(), inv.counter)
		inv.sessions = teststack.Sessions(inv.clients, env)
		inv.sessions.Now = st.mem.Clock.Clock()
	} else {
		inv.sessions = st.mem.Sessions()
	}
	inv.runner = &turn.Runner{Sessions: inv.sessions, Agents: turn.AgentMap{agent.Name: agent}, Waker: inv.sessions.Waker}
	return inv
}

var script, demoAgent, count = teststack.Script, teststack.DemoAgent, teststack.Count

// newSession creates a session with one waiting message.
func newSession(t testing.TB, inv *invocation, text string) string {
	t.Helper()
	return teststack.NewSession(t, inv.sessions, "demo", text)
}

func facts(t testing.TB, inv *invocation, id string) []reducer.Fact {
	t.Helper()
	return teststack.Facts(t, inv.sessions, id)
}

func types(fs []reducer.Fact) []reducer.Type {
	out := make([]reducer.Type, len(fs))
	for i, f := range fs {
		out[i] = f.Type
	}
	return out
}

// readParts reads a whole stream back.
func readParts(t testing.TB, inv *invocation, id, stream string) ([]parts.Part, streams.Status) {
	t.Helper()
	ps, st, err := teststack.Parts(context.Background(), inv.sessions, id, stream)
	if err != nil {
		t.Fatal(err)
	}
	return ps, st
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
		ps, _ := readParts(t, inv, id, tr.Stream)
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

func content(ps []parts.Part) []parts.Part {
	var out []parts.Part
	for _, p := range ps {
		if p.Marker() {
			continue
		}
		if p.Type == parts.Start {
			p.MessageID = ""
		}
		// Baton's call ids name the turn; the rest of each is the same.
		p.ToolCallID = turnInID.ReplaceAllString(p.ToolCallID, "tc_")
		p.ApprovalID = turnInID.ReplaceAllString(p.ApprovalID, "tc_")
		// So are the times of each step.
		p.MessageMetadata = conversation.Untimed(p.MessageMetadata)
		out = append(out, p)
	}
	return out
}

// mergeDeltas joins consecutive text deltas, which chunking coalesces
// differently depending on where flushes fell.
func mergeDeltas(ps []parts.Part) []parts.Part {
	var out []parts.Part
	for _, p := range ps {
		if n := len(out); n > 0 && (p.Type == parts.TextDelta || p.Type == parts.ReasoningDelta) &&
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
