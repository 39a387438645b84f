package supportdesk_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/examples/supportdesk"
	"github.com/baton-run/baton/examples/supportdesk/crm"
)

// desk starts the CRM and the kit with the desk agent playing script.
func desk(t *testing.T, script string) (*batontest.Kit, *supportdesk.Shop, *crm.Server, *batontest.Recorder) {
	t.Helper()
	c := crm.New()
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	shop := supportdesk.NewShop()
	cfg, err := supportdesk.Config(supportdesk.Settings{Model: "script:" + script, CRM: srv.URL}, shop)
	if err != nil {
		t.Fatal(err)
	}
	rec := batontest.Record(cfg.Agents[0].Model)
	cfg.Agents[0].Model = rec
	return batontest.New(t, cfg), shop, c, rec
}

// TestRefundOverTheLimitWaitsForApproval: the model looks the order up,
// reads the customer from the CRM and refunds 250. The refund is over the
// limit, so the turn suspends for an operator with nothing refunded; once
// approved, the next invocation refunds, through the ledger, and the CRM
// note is added.
func TestRefundOverTheLimitWaitsForApproval(t *testing.T) {
	kit, shop, c, _ := desk(t, supportdesk.DemoScript)
	s := kit.Session("desk")
	s.Post("My headphones (A-1002) broke. Refund me, please.")

	out := s.Run()
	p := s.Pending()
	if out.Kind != batontest.Suspended || len(p) != 1 || p[0].Tool != "refund" {
		t.Fatalf("outcome %+v, pending %+v; want suspended for one refund approval", out, p)
	}
	if o, _ := shop.Order("A-1002"); o.Refunded != 0 {
		t.Fatalf("refunded %.2f before the approval", o.Refunded)
	}
	if c := s.Call("lookup_order"); !strings.Contains(string(c.Output), `"paid":250`) {
		t.Fatalf("lookup_order: %s", c)
	}
	if c := s.Call("get_customer"); !strings.Contains(string(c.Output), `"tier":"gold"`) {
		t.Fatalf("get_customer: %s", c)
	}

	s.Approve(p[0].ID)
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("after approval: %+v", out)
	}
	if o, _ := shop.Order("A-1002"); o.Refunded != 250 {
		t.Fatalf("refunded %.2f, want 250", o.Refunded)
	}
	if c := s.Call("refund"); string(c.Output) != `{"order":"A-1002","amount":250,"left":0}` {
		t.Fatalf("refund: %s", c)
	}
	// The write and the MCP side effect went through the ledger, the reads did not.
	if ex := s.Executions(); !slices.Equal(ex, []string{"refund", "add_note"}) {
		t.Fatalf("executions %v, want refund, add_note", ex)
	}
	if n := c.Notes("ben@example.com"); len(n) != 1 {
		t.Fatalf("CRM notes %v", n)
	}
}

// TestSmallRefundNeedsNoApproval: at or under the limit the refund runs in
// the first invocation.
func TestSmallRefundNeedsNoApproval(t *testing.T) {
	kit, shop, _, _ := desk(t, `{"steps":[
	 {"toolCalls":[{"name":"refund","input":{"order":"A-1001","amount":40,"reason":"broken"}}]},
	 {"text":"Refunded 40."}]}`)
	s := kit.Session("desk")
	s.Post("Refund my kettle.")
	if out := s.Run(); out.Kind != batontest.Completed || len(s.Pending()) != 0 {
		t.Fatalf("outcome %+v", out)
	}
	if o, _ := shop.Order("A-1001"); o.Refunded != 40 {
		t.Fatalf("refunded %.2f", o.Refunded)
	}
	if ex := s.Executions(); !slices.Equal(ex, []string{"refund"}) {
		t.Fatalf("executions %v", ex)
	}
}

// TestBadRefundsAreToolErrors: input that does not match the derived
// schema, and a refund the shop refuses, reach the model as error results;
// the turn goes on, nothing is refunded, and invalid input never reaches
// the ledger.
func TestBadRefundsAreToolErrors(t *testing.T) {
	kit, shop, _, _ := desk(t, `{"steps":[
	 {"toolCalls":[
	  {"name":"refund","input":{"order":"A-1001","amount":"lots"}},
	  {"name":"refund","input":{"amount":5}},
	  {"name":"refund","input":{"order":"A-1001","amount":5,"tip":1}},
	  {"name":"refund","input":{"order":"A-1001","amount":90}}]},
	 {"text":"I could not refund that."}]}`)
	s := kit.Session("desk")
	s.Post("Refund me.")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("outcome %+v", out)
	}
	calls := s.ToolCalls()
	if len(calls) != 4 {
		t.Fatalf("calls %v", calls)
	}
	for _, c := range calls[:3] {
		if !strings.Contains(c.Error, "invalid input for tool refund") || c.Output != nil {
			t.Errorf("call %s: want an invalid input error", c)
		}
	}
	if !strings.Contains(calls[3].Error, "only 40.00 of 40.00 is left") {
		t.Errorf("call %s: want the shop's refusal", calls[3])
	}
	if o, _ := shop.Order("A-1001"); o.Refunded != 0 {
		t.Fatalf("refunded %.2f", o.Refunded)
	}
	if ex := s.Executions(); !slices.Equal(ex, []string{"refund"}) {
		t.Fatalf("executions %v: want only the valid call recorded", ex)
	}
	if s.Text() != "I could not refund that." {
		t.Fatalf("text %q", s.Text())
	}
}

// TestRefundSchemaIsDerivedAndShown: the model is shown refund's schema,
// derived from RefundInput: its json names, its jsonschema descriptions,
// order and amount required, nothing else allowed.
func TestRefundSchemaIsDerivedAndShown(t *testing.T) {
	kit, _, _, rec := desk(t, `{"steps":[{"text":"Hello."}]}`)
	s := kit.Session("desk")
	s.Post("Hi.")
	s.Run()
	spec, ok := rec.Tool("refund")
	if !ok {
		t.Fatal("refund was not shown to the model")
	}
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}
	if err := json.Unmarshal(spec.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.Properties["amount"].Type != "number" ||
		schema.Properties["order"].Description != "the order id" || !slices.Equal(schema.Required, []string{"order", "amount"}) ||
		string(schema.AdditionalProperties) != "false" {
		t.Fatalf("refund schema %s", spec.Schema)
	}
	var names []string
	for _, tl := range rec.Requests()[0].Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"lookup_order", "refund", crm.GetCustomer, crm.AddNote}) {
		t.Fatalf("tools shown %v", names)
	}
}
