package batontest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/pkg/reducer"
)

// byText plays, for each step, the script of the turn's last user message.
type byText map[string]baton.Model

func (m byText) Stream(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
	last := ""
	for _, msg := range req.Messages {
		if msg.Role == "user" && len(msg.Content) > 0 && msg.Content[0].Text != "" {
			last = msg.Content[0].Text
		}
	}
	if sc, ok := m[last]; ok {
		return sc.Stream(ctx, req)
	}
	return func(yield func(baton.Event, error) bool) { yield(baton.Event{}, fmt.Errorf("no script for %q", last)) }
}

// input is what a request shows the model: its system prompt,
// conversation and tools, as JSON.
func input(t *testing.T, r baton.Request) string {
	t.Helper()
	b, err := json.Marshal([]any{r.System, r.Messages, r.Tools})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestForkAndRewind: a session of two turns (a weather read, then a
// charge) is forked at turn one's end and within turn two, and then
// rewound to answer turn two afresh. Each shows the model, at its first
// step, what the original showed it at that point; the charges after each
// point are listed, and the fork leaves the original as it was; a point
// the session does not have is refused.
func TestForkAndRewind(t *testing.T) {
	var charges atomic.Int32
	charge := baton.Func("charge", "Charge the card.", func(_ context.Context, in struct {
		Cents int `json:"cents"`
	}) (string, error) {
		charges.Add(1)
		return "charged", nil
	})
	weather := baton.Func("weather", "The weather.", func(_ context.Context, in struct {
		City string `json:"city"`
	}) (string, error) {
		return "sunny in " + in.City, nil
	}, baton.Read())
	rec := batontest.Record(byText{
		"Weather in Oslo?": batontest.Script(t, `{"steps":[{"toolCalls":[{"name":"weather","input":{"city":"Oslo"}}]},{"text":"Sunny."}]}`),
		"Charge me.":       batontest.Script(t, `{"steps":[{"toolCalls":[{"name":"charge","input":{"cents":100}}]},{"text":"Charged."}]}`),
	})
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "till", Model: rec, Tools: []baton.Tool{charge, weather}}}})
	s := kit.Session("till")
	s.Post("Weather in Oslo?")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("turn one: %+v", out)
	}
	s.Post("Charge me.")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("turn two: %+v", out)
	}
	turns := s.Turns()
	orig := rec.Requests()
	if len(turns) != 2 || len(orig) != 4 || charges.Load() != 1 {
		t.Fatalf("%d turns, %d requests, %d charges", len(turns), len(orig), charges.Load())
	}
	facts := len(s.Facts())

	// A fork at turn one's end, asked what turn two was asked.
	f1, effects, err := s.Fork(batontest.End(turns[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != 1 || effects[0].Tool != "charge" || !effects[0].Completed || effects[0].Turn != turns[1] {
		t.Fatalf("effects after turn one: %+v", effects)
	}
	f1.Post("Charge me.")
	if out := f1.Run(); out.Kind != batontest.Completed {
		t.Fatalf("the fork's turn: %+v", out)
	}
	if got := rec.Requests(); input(t, got[4]) != input(t, orig[2]) {
		t.Fatalf("the fork's first request:\n%s\nwant the original's at turn two:\n%s", input(t, got[4]), input(t, orig[2]))
	}

	// A fork within turn two, after its charge: the next step, not the charge again.
	f2, effects, err := s.Fork(batontest.Step(turns[1], 1))
	if err != nil || len(effects) != 0 {
		t.Fatalf("fork after step 1: %v, effects %+v", err, effects)
	}
	if out := f2.Run(); out.Kind != batontest.Completed {
		t.Fatalf("the step fork's turn: %+v", out)
	}
	if got := rec.Requests(); input(t, got[6]) != input(t, orig[3]) {
		t.Fatalf("the step fork's first request:\n%s\nwant the original's second step of turn two:\n%s", input(t, got[6]), input(t, orig[3]))
	}
	if charges.Load() != 2 {
		t.Fatalf("%d charges; the fork at the end of turn one charged once, the one after the charge never", charges.Load())
	}
	if n := len(s.Facts()); n != facts {
		t.Fatalf("forks wrote %d facts to the original", n-facts)
	}

	// Regenerate turn two in the original.
	effects, err = s.Rewind(batontest.Step(turns[1], 0))
	if err != nil || len(effects) != 1 || !effects[0].Completed {
		t.Fatalf("rewind to turn two's start: %v, effects %+v", err, effects)
	}
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("the regenerated turn: %+v", out)
	}
	if got := rec.Requests(); input(t, got[7]) != input(t, orig[2]) {
		t.Fatalf("the regenerated turn's request:\n%s\nwant:\n%s", input(t, got[7]), input(t, orig[2]))
	}
	if charges.Load() != 3 {
		t.Fatalf("%d charges; the regenerated turn charges again", charges.Load())
	}
	if got := f2.Text(); got != "Charged." {
		t.Fatalf("the step fork's text %q: its copied step has none, its new one says Charged.", got)
	}

	var pe *reducer.PointError
	if _, _, err := s.Fork(batontest.End("turn_nope")); !errors.As(err, &pe) {
		t.Fatalf("fork at an unknown turn: %v", err)
	}
	if _, err := s.Rewind(batontest.Step(turns[0], 5)); !errors.As(err, &pe) {
		t.Fatalf("rewind past the turn's steps: %v", err)
	}
}
