package operator_test

import (
	"net/http"
	"testing"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestTraceparentReachesTheTurn: a message posted with a traceparent
// header records it, so the turn it starts is traced under the caller's
// trace, and the wake sent for it carries it; an invalid header is
// ignored and the post still succeeds.
func TestTraceparentReachesTheTurn(t *testing.T) {
	t.Parallel()
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	e.wakes() // the creation's, if any
	for _, header := range []string{tp, "00-not-a-trace"} {
		e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice,
			body: `{"text":"hi"}`, header: map[string]string{"traceparent": header}})
	}
	var traces []string
	for _, f := range e.facts(s.ID) {
		if f.Type == reducer.MessageReceived {
			traces = append(traces, f.Message.Trace)
		}
	}
	if len(traces) != 2 || traces[0] != tp || traces[1] != "" {
		t.Errorf("message traces %q, want %q then none", traces, tp)
	}
	found := false
	for _, w := range e.wakes() {
		found = found || w.Trace == tp
	}
	if !found {
		t.Errorf("no wake carried the request's trace")
	}
}
