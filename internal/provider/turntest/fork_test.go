package turntest_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/baton-run/baton/internal/ids"
	pt "github.com/baton-run/baton/internal/provider/providertest"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// TestForkRebuildsTheSameRequest runs, on each provider, a session of two
// turns (a probe step, then text; two probe steps, then text), forks it at
// the end of turn one, at step 1 of turn two and at step 0 of turn two,
// and runs each fork on: the fork's first request must equal, byte for
// byte, the request the original sent at that point. The original's facts
// and rebuilt input are unchanged by the forks.
func TestForkRebuildsTheSameRequest(t *testing.T) {
	for _, w := range byteWires {
		t.Run(w.name, func(t *testing.T) { forkWire(t, w) })
	}
}

func forkWire(t *testing.T, w byteWire) {
	ctx := ctxT(t)
	replies := []pt.Reply{
		w.call(t, 1, "call_probe_1", "probe", `{"n": 1, "note": "café ☕"}`),
		w.text(t, 2, "Turn one done."),
		w.call(t, 3, "call_probe_3", "probe", `{"n": 3}`),
		w.call(t, 4, "call_probe_4", "probe", `{"n":4, "deep": [1.50, "x"]}`),
		w.text(t, 5, "Turn two done."),
	}
	outputs := []string{`{"slept": 0.10}`, ` "plain ✓" `, `[1, {"a": null}]`}
	srv := pt.NewServer(t, replies...)
	p := &probe{outputs: append([]string(nil), outputs...)}
	run := fresh(p.agent(t, w.model(t, srv.URL)))
	sid := newSession(t, run, "Probe once.")
	if out, err := run.runner.Start(ctx, sid); err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn one: %+v, %v", out, err)
	}
	teststack.Post(t, run.sessions, sid, teststack.Load(t, run.sessions, sid), "Probe twice.")
	if out, err := run.runner.Start(ctx, sid); err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn two: %+v, %v", out, err)
	}
	live := srv.Requests()
	if len(live) != 5 {
		t.Fatalf("%d requests, want 5", len(live))
	}
	var turns []string
	for _, f := range facts(t, run, sid) {
		if f.Type == reducer.TurnStarted {
			turns = append(turns, f.Turn)
		}
	}
	before := facts(t, run, sid)
	history := transcriptOf(t, run, sid)

	zero, one := 0, 1
	for _, c := range []struct {
		name  string
		point reducer.Point
		post  string // a message to post to the fork first
		want  int    // the original's request the fork's first equals
		from  int    // the replies and outputs the fork goes on with
		probe int
	}{
		{"end of turn one", reducer.Point{Turn: turns[0]}, "Probe twice.", 2, 2, 1},
		{"turn two after step 1", reducer.Point{Turn: turns[1], Step: &one}, "", 3, 3, 2},
		{"turn two at step 0", reducer.Point{Turn: turns[1], Step: &zero}, "", 2, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsrv := pt.NewServer(t, replies[c.from:]...)
			fp := &probe{outputs: append([]string(nil), outputs[c.probe:]...)}
			inv := fresh(fp.agent(t, w.model(t, fsrv.URL)))
			to := ids.New("s")
			rw, err := inv.sessions.Fork(ctx, sid, to, operator, c.point, false)
			if err != nil {
				t.Fatalf("fork at %s: %v", c.point, err)
			}
			if rw.State.From != sid || rw.State.Owner != teststack.Alice.ID {
				t.Fatalf("fork state: from %q owner %q", rw.State.From, rw.State.Owner)
			}
			if c.post != "" {
				teststack.Post(t, inv.sessions, to, teststack.Load(t, inv.sessions, to), c.post)
			}
			var out turn.Outcome
			if c.point.Step != nil && *c.point.Step > 0 {
				out, err = inv.runner.Resume(ctx, to)
			} else {
				out, err = inv.runner.Start(ctx, to)
			}
			if err != nil || out.Kind != turn.Completed {
				t.Fatalf("the fork's turn: %+v, %v", out, err)
			}
			got := fsrv.Requests()
			if len(got) == 0 || !bytes.Equal(got[0].Body, live[c.want].Body) {
				t.Fatalf("the fork's first request differs from the original's request %d:\nfork:\n%s\noriginal:\n%s", c.want+1, body(got), live[c.want].Body)
			}
			if len(got) != len(live)-c.want {
				t.Errorf("the fork made %d requests, want %d", len(got), len(live)-c.want)
			}
		})
	}
	after := facts(t, run, sid)
	if len(after) != len(before) {
		t.Errorf("the original has %d facts after the forks, %d before", len(after), len(before))
	}
	if again := transcriptOf(t, run, sid); !bytes.Equal(again, history) {
		t.Errorf("the original's rebuilt conversation changed:\nbefore: %s\nafter:  %s", history, again)
	}
}

func body(rs []pt.Request) string {
	if len(rs) == 0 {
		return "(no request)"
	}
	return string(rs[0].Body)
}

// transcriptOf is the session's rebuilt conversation history, as JSON.
func transcriptOf(t *testing.T, inv *invocation, id string) []byte {
	t.Helper()
	sess, err := inv.sessions.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(fmt.Sprintf("%+v", sess.History))
}
