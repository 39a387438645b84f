package supportdesk

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/examples/supportdesk/crm"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/providers/anthropic"
)

// RefundApprovalOver is the refund amount above which an operator must
// approve.
const RefundApprovalOver = 100

// System is the desk agent's system prompt.
const System = `You are the support desk of an online shop. Look orders up before you act.
Refund what the customer is owed, never more than was paid. Note what you did in the CRM.`

// Order is one order of the shop.
type Order struct {
	ID       string  `json:"id"`
	Customer string  `json:"customer"`
	Item     string  `json:"item"`
	Paid     float64 `json:"paid"`
	Refunded float64 `json:"refunded"`
}

// Refund is a refund made.
type Refund struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
	// Left is what may still be refunded on the order.
	Left float64 `json:"left"`
}

// Shop is the order book the desk's tools work on. It is in memory here;
// a real desk calls its shop's API.
type Shop struct {
	mu     sync.Mutex
	orders map[string]*Order
	// refunds by idempotency key: a refund run again for one tool call
	// (after a crash) refunds once.
	refunds map[string]Refund
}

// NewShop returns a shop with three orders: A-1001 (40.00), A-1002
// (250.00) and A-1003 (999.00).
func NewShop() *Shop {
	s := &Shop{orders: map[string]*Order{}, refunds: map[string]Refund{}}
	for _, o := range []Order{
		{ID: "A-1001", Customer: "ana@example.com", Item: "kettle", Paid: 40},
		{ID: "A-1002", Customer: "ben@example.com", Item: "headphones", Paid: 250},
		{ID: "A-1003", Customer: "cy@example.com", Item: "bicycle", Paid: 999},
	} {
		s.orders[o.ID] = &o
	}
	return s
}

// Order returns a copy of an order.
func (s *Shop) Order(id string) (Order, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		return Order{}, false
	}
	return *o, true
}

// ErrNoOrder is a lookup or refund of an order the shop does not have.
var ErrNoOrder = errors.New("no such order")

// LookupInput is lookup_order's input.
type LookupInput struct {
	Order string `json:"order" jsonschema:"the order id, such as A-1001"`
}

// RefundInput is refund's input.
type RefundInput struct {
	Order  string  `json:"order" jsonschema:"the order id"`
	Amount float64 `json:"amount" jsonschema:"the amount to refund, in the order's currency"`
	Reason string  `json:"reason,omitempty" jsonschema:"why, in a few words"`
}

// Lookup reads an order.
func (s *Shop) Lookup(_ context.Context, in LookupInput) (Order, error) {
	o, ok := s.Order(in.Order)
	if !ok {
		return Order{}, fmt.Errorf("order %q: %w", in.Order, ErrNoOrder)
	}
	return o, nil
}

// Refund refunds part or all of an order, once per tool call: a call run
// again with the same idempotency key returns the first run's refund.
func (s *Shop) Refund(ctx context.Context, in RefundInput) (Refund, error) {
	key := baton.IdempotencyKey(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.refunds[key]; ok && key != "" {
		return r, nil
	}
	o, ok := s.orders[in.Order]
	switch {
	case !ok:
		return Refund{}, fmt.Errorf("order %q: %w", in.Order, ErrNoOrder)
	case in.Amount <= 0 || math.IsNaN(in.Amount):
		return Refund{}, fmt.Errorf("refund %v: the amount must be positive", in.Amount)
	case o.Refunded+in.Amount > o.Paid:
		return Refund{}, fmt.Errorf("refund %.2f on %s: only %.2f of %.2f is left to refund", in.Amount, o.ID, o.Paid-o.Refunded, o.Paid)
	}
	o.Refunded += in.Amount
	r := Refund{Order: o.ID, Amount: in.Amount, Left: o.Paid - o.Refunded}
	if key != "" {
		s.refunds[key] = r
	}
	return r, nil
}

// Tools are the desk's Go tools: lookup_order, a read, and refund, a write
// that is idempotent and needs an operator's approval above
// RefundApprovalOver.
func (s *Shop) Tools() []baton.Tool {
	return []baton.Tool{
		baton.Func("lookup_order", "Look an order up: its customer, item, what was paid and refunded.", s.Lookup, baton.Read()),
		baton.Func("refund", fmt.Sprintf("Refund part or all of an order. Refunds over %d need an operator's approval.", RefundApprovalOver),
			s.Refund, baton.Write(), baton.Idempotent(), baton.NeedsApproval(baton.Over("amount", RefundApprovalOver))),
	}
}

// Settings choose the desk's model and CRM.
type Settings struct {
	// Model is "anthropic:<model id>" (the key from ANTHROPIC_API_KEY) or
	// "script:<JSON script>" for a scripted model. Empty means
	// DefaultModel.
	Model string
	// CRM is the URL of the CRM's MCP endpoint; empty leaves its tools out.
	CRM string
}

// DefaultModel is the model the desk uses unless Settings say otherwise.
const DefaultModel = "anthropic:claude-sonnet-4-5"

// Config is the program's baton configuration: the "desk" agent with the
// shop's tools and, when set.CRM is given, the CRM's get_customer and
// add_note.
func Config(set Settings, shop *Shop) (host.Config, error) {
	m, err := model(set.Model)
	if err != nil {
		return host.Config{}, err
	}
	desk := baton.Agent{Name: "desk", Model: m, System: System, Tools: shop.Tools()}
	if set.CRM != "" {
		desk.MCP = []baton.MCPServer{{Name: "crm", URL: set.CRM, Allow: []string{crm.GetCustomer, crm.AddNote}}}
	}
	return host.Config{Agents: []baton.Agent{desk}}, nil
}

func model(spec string) (baton.Model, error) {
	if spec == "" {
		spec = DefaultModel
	}
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "anthropic":
		return anthropic.New(anthropic.Config{Model: arg})
	case "script":
		return baton.Script([]byte(arg))
	}
	return nil, fmt.Errorf("supportdesk: model %q: want anthropic:<model id> or script:<JSON script>", spec)
}

// DemoScript is a scripted desk for the dev server and the tests: it looks
// order A-1002 up, reads the customer, refunds the whole 250 (which waits
// for an operator), notes it in the CRM and answers.
const DemoScript = `{"steps":[
 {"text":"Let me look at your order.","toolCalls":[
  {"name":"lookup_order","input":{"order":"A-1002"}},
  {"name":"get_customer","input":{"customer":"ben@example.com"}}]},
 {"text":"I am refunding the headphones.","toolCalls":[
  {"name":"refund","input":{"order":"A-1002","amount":250,"reason":"broken on arrival"}}]},
 {"toolCalls":[{"name":"add_note","input":{"customer":"ben@example.com","note":"refunded A-1002 in full"}}]},
 {"text":"Your 250.00 is on its way back to you."}
]}`
