package tool

import (
	"encoding/json"
	"testing"
)

// BenchmarkCompile compiles the demo tools' schemas and the order schema,
// as a registry does on each tool's first Check.
func BenchmarkCompile(b *testing.B) {
	schemas := []json.RawMessage{json.RawMessage(orderSchema)}
	for _, t := range Demo() {
		schemas = append(schemas, t.Schema)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range schemas {
			if _, err := compile("t", s); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCheckInvalid validates and explains an input with several
// problems.
func BenchmarkCheckInvalid(b *testing.B) {
	r, err := NewRegistry(append(Demo(), Tool{Name: "order", Schema: json.RawMessage(orderSchema), Run: noop})...)
	if err != nil {
		b.Fatal(err)
	}
	in := json.RawMessage(`{"items":[{"name":"a"},{}],"mode":"medium","address":{"street":"x"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if r.Check("order", in) == nil {
			b.Fatal("valid")
		}
	}
}
