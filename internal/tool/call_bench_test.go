package tool

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkRuleNeeds compares a declarative Over rule with a typed
// predicate that decodes the input (as baton.When does).
func BenchmarkRuleNeeds(b *testing.B) {
	in := json.RawMessage(`{"order":"A-1002","amount":250,"note":"customer called"}`)
	type refund struct {
		Order  string  `json:"order"`
		Amount float64 `json:"amount"`
		Note   string  `json:"note"`
	}
	for _, bc := range []struct {
		name string
		rule Rule
	}{
		{"over", Rule{Over: &OverRule{Field: "amount", Limit: 100}}},
		{"when", Rule{When: func(input json.RawMessage) (bool, error) {
			var r refund
			if err := json.Unmarshal(input, &r); err != nil {
				return true, err
			}
			return r.Amount < 10 || r.Amount > 100, nil
		}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !bc.rule.Needs(in) {
					b.Fatal("does not ask")
				}
			}
		})
	}
}

// BenchmarkInvoke is the cost Invoke adds around a tool's Run: the call in
// the context, and a timeout when the tool has one.
func BenchmarkInvoke(b *testing.B) {
	run := func(ctx context.Context, c Call) (json.RawMessage, error) { return json.RawMessage(`1`), nil }
	for _, bc := range []struct {
		name string
		t    Tool
	}{
		{"plain", Tool{Run: run}},
		{"timeout", Tool{Run: run, Timeout: 1e9}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if _, err := Invoke(ctx, bc.t, Call{ID: "c"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
