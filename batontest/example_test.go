package batontest_test

import (
	"context"
	"fmt"
	"log"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
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
func ExampleKit() {
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

	kit := batontest.New(tb, host.Config{Agents: []baton.Agent{
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

// A long conversation with a compacting agent: past 300 input tokens the
// ended turns before the last one are summarised (here by a scripted
// summariser), and each request carries the summary and the turns after it.
func ExampleKit_compaction() {
	tb := &exampleTB{} // in a test: t
	defer tb.done()

	answer, err := baton.Script([]byte(`{"steps":[{"text":"Noted, and filed with the others for later reference."}]}`))
	if err != nil {
		log.Fatal(err)
	}
	summariser, err := baton.Script([]byte(`{"steps":[{"text":"The user filed numbered notes."}]}`))
	if err != nil {
		log.Fatal(err)
	}
	rec := batontest.Record(answer)
	kit := batontest.New(tb, host.Config{Agents: []baton.Agent{{
		Name: "notes", Model: rec,
		Compaction: &baton.Compaction{InputTokens: 300, KeepTurns: 1, Model: summariser},
	}}})
	s := kit.Session("notes")
	for i := range 12 {
		s.Post(fmt.Sprintf("Note %d: the quick brown fox jumps over the lazy dog, again and again.", i))
		s.Run()
	}
	reqs := rec.Requests()
	last := reqs[len(reqs)-1]
	fmt.Println(s.State().Compactions > 0, len(last.Messages) < 2*12)
	fmt.Println(last.Messages[0].Content[0].Text[:30])
	// Output:
	// true true
	// Summary of the earlier convers
}
