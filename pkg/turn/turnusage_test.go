package turn_test

import (
	"encoding/json"
	"testing"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// Every step's message-metadata says the turn's usage through it: the sum
// of the steps' own usage so far, across invocations, so the stream's end
// alone tells a reader the turn's usage.
func TestStepMetadataCarriesTheTurnsUsage(t *testing.T) {
	t.Parallel()
	agent := demoAgent(t, script(t, stepsScript(5)), turn.Limits{MaxStepsPerInvocation: 2})
	agent.Price = &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}
	inv := fresh(t, agent)
	id := newSession(t, inv, "Go.")
	ctx := ctxT(t)
	out, err := inv.runner.Start(ctx, id)
	for err == nil && out.Kind == turn.Suspended {
		out, err = fresh(t, agent).runner.Resume(ctx, id)
	}
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn: %+v, %v", out, err)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	var sum reducer.Usage
	steps := 0
	for _, p := range ps {
		if p.Type != parts.MessageMetadata {
			continue
		}
		var m struct {
			Usage reducer.Usage `json:"usage"`
		}
		if err := json.Unmarshal(p.MessageMetadata, &m); err != nil {
			t.Fatal(err)
		}
		sum = sum.Add(m.Usage)
		steps++
		got, ok := conversation.TurnUsage(p)
		if !ok || got != sum {
			t.Fatalf("step %d says the turn used %+v (%v), want the sum so far %+v", steps, got, ok, sum)
		}
	}
	if steps != 5 || sum != out.Usage || sum.CostMicroUSD == 0 {
		t.Fatalf("%d steps summing to %+v; the turn's outcome says %+v", steps, sum, out.Usage)
	}
}
