package batontest_test

import (
	"context"
	"fmt"
	"log"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
)

// A session recorded in the kit and exported (as baton export does, or
// read back from a golden file with LoadExport) replays against its own
// agent with no divergence; against the agent with a tightened approval
// rule, the report names the call that would now wait for an operator.
func ExampleReplay() {
	tb := &exampleTB{} // in a test: t
	defer tb.done()

	type refund struct {
		Order  string  `json:"order"`
		Amount float64 `json:"amount"`
	}
	agent := func(over float64) host.Config {
		tool := baton.Func("refund", "Refund an order.", func(_ context.Context, in refund) (string, error) {
			return fmt.Sprintf("refunded %.2f on %s", in.Amount, in.Order), nil
		}, baton.Write(), baton.NeedsApproval(baton.Over("amount", over)))
		model, err := baton.Script([]byte(`{"steps":[
		 {"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"A-1","amount":50}}]},
		 {"text":"Done."}]}`))
		if err != nil {
			log.Fatal(err)
		}
		return host.Config{Agents: []baton.Agent{{Name: "desk", Model: model, Tools: []baton.Tool{tool}}}}
	}

	kit := batontest.New(tb, agent(100))
	s := kit.Session("desk")
	s.Post("Refund 50 on order A-1.")
	s.Run()
	export := s.Export() // or batontest.LoadExport(t, "testdata/refund.json")

	same := batontest.Replay(tb, export, agent(100))
	fmt.Println("own agent:", len(same.Divergences), "divergences")

	stricter := batontest.ReplayReport(tb, export, agent(10))
	for _, d := range stricter.Divergences {
		fmt.Println("stricter rule:", d.Kind, d.Tool, "at turn", d.Turn, "step", d.Step)
	}
	// Output:
	// own agent: 0 divergences
	// stricter rule: rule-changed refund at turn 1 step 1
}
