package tick_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// down is a model whose provider keeps failing with a 500.
type down struct{}

func (down) Stream(context.Context, model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		yield(model.Event{}, &model.Error{Kind: model.Unavailable, Status: 500, Err: errors.New("internal server error")})
	}
}

// A turn suspended for a model fault waits for its delayed wake: the tick
// does not take that wake as lost until grace has passed after it was due.
func TestDelayedFaultWakeIsNotResentEarly(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStack(t)
	const delay = 10 * time.Minute
	agent := demoAgent(t, down{}, turn.Limits{ModelRetry: model.RetryPolicy{Attempts: 1, WakeDelay: delay}})
	inv := s.fresh(agent)
	id := newSession(t, inv, "Hello?")
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseModelUnavailable {
		t.Fatalf("start: %+v, %v", out, err)
	}
	st := teststack.Load(t, inv.sessions, id)
	if st.Turn.Faults != 1 || st.Turn.Wake.Sub(st.Updated).Round(time.Second) != delay {
		t.Fatalf("turn %+v, want one fault and a wake %s on", st.Turn, delay)
	}

	tk := s.fresh(nil).tick
	// Past the grace period after the suspension, but before the wake is
	// due: the session is not even due.
	tk.Now = at(tick.DefaultGrace + time.Minute)
	rep, err := tk.Run(ctx)
	if err != nil || rep.Seen != 0 || rep.Rewoken != 0 {
		t.Fatalf("tick before the wake is due: %+v, %v", rep, err)
	}
	// Due, within grace: the delayed wake may be in flight.
	tk.Now = at(delay + time.Second)
	rep, err = tk.Run(ctx)
	if err != nil || rep.Seen != 1 || rep.Rewoken != 0 {
		t.Fatalf("tick as the wake is due: %+v, %v", rep, err)
	}
	// Past grace after it was due: the wake was lost; it is sent again.
	tk.Now = at(delay + tick.DefaultGrace + time.Minute)
	rep, err = tk.Run(ctx)
	if err != nil || rep.Seen != 1 || rep.Rewoken != 1 {
		t.Fatalf("tick past grace after the wake was due: %+v, %v", rep, err)
	}
	if ws := s.receive(t); len(ws) != 1 || ws[0].Session != id || ws[0].Reason != wake.Rewake {
		t.Fatalf("wakes = %+v", ws)
	}
}
