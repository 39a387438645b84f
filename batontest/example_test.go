package batontest_test

import (
	"context"
	"fmt"
	"log"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
)

// exampleTB is the kit's TB outside a test; in a test pass t.
type exampleTB struct{ cleanups []func() }

func (*exampleTB) Helper()                           {}
func (*exampleTB) Fatalf(format string, args ...any) { log.Fatalf(format, args...) }
func (t *exampleTB) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (t *exampleTB) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// A turn of a Go agent whose refund tool needs approval above 100: the kit
// runs it through the resume worker, the operator approves, and the next
// invocation runs the tool through the ledger.
func Example() {
	tb := &exampleTB{} // in a test: t
	defer tb.done()

	type refund struct {
		Order  string  `json:"order"`
		Amount float64 `json:"amount"`
	}
	tool := baton.Func("refund", "Refund an order.", func(_ context.Context, in refund) (string, error) {
		return fmt.Sprintf("refunded %.2f on %s", in.Amount, in.Order), nil
	}, baton.NeedsApproval(baton.Over("amount", 100)))
	model, err := baton.Script([]byte(`{"steps":[
	 {"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"A-1","amount":250}}]},
	 {"text":"Done."}]}`))
	if err != nil {
		log.Fatal(err)
	}

	kit := batontest.New(tb, baton.Config{Agents: []baton.Agent{
		{Name: "desk", Model: model, Tools: []baton.Tool{tool}},
	}})
	s := kit.Session("desk")
	s.Post("Refund order A-1, please.")
	out := s.Run()
	fmt.Println(out.Kind, out.Cause, s.Pending()[0].Tool)

	s.Approve(s.Pending()[0].ID)
	out = s.Run()
	fmt.Println(out.Kind, s.Status())
	fmt.Println(string(s.Call("refund").Output), s.Executions())
	// Output:
	// suspended approval refund
	// completed idle
	// "refunded 250.00 on A-1" [refund]
}
