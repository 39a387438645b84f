package worker_test

import (
	"testing"

	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// TestWakeTraceStartsTheTurn: an SQS wake that carries a traceparent
// starts its session's untraced turn under that trace.
func TestWakeTraceStartsTheTurn(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s := newStack(t)
	inv := s.fresh(demoAgent(t, script(t, threeSteps), turn.Limits{}))
	id := newSession(t, inv, "demo", "Go.")
	resp, err := inv.worker.HandleSQS(ctxT(t), sqsEvent(body(t, wake.Wake{Session: id, Reason: wake.Message, Trace: tp})))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("HandleSQS: %+v %v", resp, err)
	}
	started := 0
	for _, f := range teststack.Facts(t, inv.sessions, id) {
		if f.Type == reducer.TurnStarted {
			started++
			if f.Trace != tp {
				t.Errorf("turn.started trace %q, want the wake's %q", f.Trace, tp)
			}
		}
	}
	if started != 1 {
		t.Errorf("%d turns started, want 1", started)
	}
}
