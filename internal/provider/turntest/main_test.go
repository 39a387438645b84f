package turntest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// env is the package's table, bucket and wake queue; everything else is
// built afresh for each "invocation".
var env testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// invocation is what one Lambda invocation builds: new AWS clients, stores
// and runner. Nothing is shared with other invocations but the emulator.
type invocation struct {
	sessions *session.Store
	runner   *turn.Runner
}

func fresh(agent *turn.Agent) *invocation {
	ss := teststack.Sessions(awsenv.Counted(env.URL(), &awsenv.Counter{}), env)
	inv := &invocation{sessions: ss}
	if agent != nil {
		inv.runner = &turn.Runner{Sessions: ss, Agents: turn.AgentMap{agent.Name: agent}, Waker: ss.Waker}
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
	a := teststack.DemoAgent(t, m, turn.Limits{})
	a.System, a.MaxTokens = System, MaxTokens
	return a
}

// newSession creates a session with one waiting message.
func newSession(t testing.TB, inv *invocation, text string) string {
	t.Helper()
	return teststack.NewSession(t, inv.sessions, "demo", text)
}

// readParts reads a whole stream back.
func readParts(ctx context.Context, inv *invocation, id, stream string) ([]parts.Part, streams.Status, error) {
	return teststack.Parts(ctx, inv.sessions, id, stream)
}

func facts(t testing.TB, inv *invocation, id string) []reducer.Fact {
	t.Helper()
	return teststack.Facts(t, inv.sessions, id)
}

var count = teststack.Count

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
