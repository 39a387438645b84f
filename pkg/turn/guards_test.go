package turn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// oslo is an input guardrail that decides d on any message naming Oslo.
func oslo(d guard.Decision) guard.Guardrail {
	return guard.Guardrail{Name: "no-oslo", Stage: guard.Input, Check: func(_ context.Context, s guard.Subject) (guard.Decision, error) {
		if strings.Contains(s.Text, "Oslo") {
			return d, nil
		}
		return guard.Decision{Action: guard.Allow}, nil
	}}
}

// A message steered into the running turn passes the input guardrails
// before the model sees it: a redaction is what it sees, this turn and
// later.
func TestGuardSteeredRedacted(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	rec := &recording{m: script(t, pokeScript)}
	p := &poker{}
	agent := steerAgent(t, rec, p, reducer.SteerSteer, turn.Limits{})
	agent.Guardrails = []guard.Guardrail{oslo(guard.Decision{Action: guard.Redact, Text: "Also look at [city]."})}
	inv := steering(t, agent)
	p.ss = inv.sessions
	id := newSession(t, inv, "Poke it.")
	p.id = id
	out, err := inv.runner.Start(ctx, id)
	if err != nil || p.err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn %+v, %v, %v", out, err, p.err)
	}
	saw := false
	for _, req := range rec.requests() {
		texts := strings.Join(userTexts(req), "|")
		if strings.Contains(texts, "Oslo") {
			t.Fatalf("the model saw the steered message unredacted: %s", texts)
		}
		saw = saw || strings.Contains(texts, "Also look at [city].")
	}
	if !saw {
		t.Fatal("the model never saw the redacted steered message")
	}
	var got []string
	for _, f := range facts(t, inv, id) {
		if f.Type == reducer.GuardDecided {
			got = append(got, f.Guard.Message+":"+string(f.Guard.Action))
		}
	}
	if len(got) != 2 || !strings.HasSuffix(got[0], ":allow") || got[1] != p.msg+":redact" {
		t.Fatalf("decisions %v, want the first message allowed and the steered one redacted", got)
	}
}

// A steered message that a guardrail blocks ends the turn, and is never
// shown to the model.
func TestGuardSteeredBlocked(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	rec := &recording{m: script(t, pokeScript)}
	p := &poker{}
	agent := steerAgent(t, rec, p, reducer.SteerSteer, turn.Limits{})
	agent.Guardrails = []guard.Guardrail{oslo(guard.Decision{Action: guard.Block, Reason: "not Oslo"})}
	inv := steering(t, agent)
	p.ss = inv.sessions
	id := newSession(t, inv, "Poke it.")
	p.id = id
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn %+v, %v", out, err)
	}
	if n := len(rec.requests()); n != 1 {
		t.Fatalf("%d model requests, want the first step only", n)
	}
	for _, req := range rec.requests() {
		if strings.Contains(strings.Join(userTexts(req), "|"), "Oslo") {
			t.Fatal("the model saw the blocked message")
		}
	}
	// Delivered withheld, it does not start another turn.
	st, err := reducer.Reduce(facts(t, inv, id))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Inbox) != 0 || st.Turn != nil {
		t.Fatalf("inbox %+v: the blocked message waits to start a turn", st.Inbox)
	}
}
