package tool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/tool"
)

// TestCheckName: a name every provider takes is 1 to 64 ASCII letters,
// digits, _ or -; anything else is refused, naming it.
func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{
		"refund": true, "Refund_Order-2": true, strings.Repeat("a", 64): true,
		"": false, "Refund Order!": false, "refund.order": false, "réfund": false, strings.Repeat("a", 65): false,
	} {
		err := tool.CheckName(name)
		if (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", name, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("CheckName(%q) = %v, want it to name the name", name, err)
		}
	}
}

// TestSchemaFields: a rule's or a claim's field must be a property the
// schema names (at its root or in allOf, anyOf, oneOf), of a type it
// reads; a free-form schema passes a rule's field (loose) and refuses a
// claim's.
func TestSchemaFields(t *testing.T) {
	for _, c := range []struct {
		schema, field string
		loose         bool
		want          []string
		err           string // "" for none
	}{
		{`{"type":"object","properties":{"amount":{"type":"number"}}}`, "amount", true, []string{"number", "integer"}, ""},
		{`{"type":"object","properties":{"amount":{"type":"integer"}}}`, "amount", true, []string{"number", "integer"}, ""},
		{`{"type":"object","properties":{"amount":{"type":"number"},"order":{"type":"string"}}}`, "amout", true, []string{"number"},
			`field "amout" is not a property of the input schema (it has amount, order)`},
		{`{"type":"object","properties":{"amount":{"type":"number"}},"additionalProperties":true}`, "amout", true, nil,
			`field "amout" is not a property of the input schema (it has amount)`},
		{`{"type":"object","properties":{"amount":{"type":"number"}}}`, "amount", false, []string{"string"},
			`field "amount" is not a string property of the input schema`},
		{`{"type":"object","properties":{"order":{"type":["null","string"]}}}`, "order", false, []string{"string"}, ""},
		{`{"type":"object","properties":{"order":{}}}`, "order", true, []string{"string"}, ""},
		{`{"type":"object","properties":{"order":{}}}`, "order", false, []string{"string"}, `field "order" is not a string property`},
		{`{"type":"object","allOf":[{"properties":{"order":{"type":"string"}}}]}`, "order", false, []string{"string"}, ""},
		{`{"type":"object"}`, "amount", true, nil, ""},
		{``, "amount", true, nil, ""},
		{`{"type":"object","additionalProperties":{}}`, "amount", true, nil, ""},
		{`{"type":"object"}`, "order", false, []string{"string"}, `field "order" is not a property of the input schema (it names none)`},
		{`{"type":"object","additionalProperties":false}`, "amount", true, nil, `(it names none)`},
	} {
		f, err := tool.SchemaFields(json.RawMessage(c.schema))
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		err = f.Check(c.field, c.loose, c.want...)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s %q loose %v: %v, want none", c.schema, c.field, c.loose, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %q loose %v: %v, want %q", c.schema, c.field, c.loose, err, c.err)
		}
	}
}
