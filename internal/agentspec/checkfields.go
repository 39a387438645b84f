package agentspec

import (
	"fmt"

	"github.com/baton-run/baton/internal/tool"
)

// checkFields refuses, on the tool t configured at field, a claim on a
// field that is not a string property of its input schema, and an
// approval rule (its own, or the agent's, agentRule, configured at
// "approvals.<tool>") on a field the schema does not have or of another
// type than the rule reads: Over a number, PathPrefix a string. A rule
// that is a Go predicate on the whole input (When) names no field and is
// not checked. Rules and claims read top-level fields by exact name, so a
// field must be one of the schema's properties, even where the schema
// allows properties it does not name (see tool.Fields.Check).
func checkFields(field string, t tool.Tool, agentRule *tool.Rule, bad func(field string, err error)) {
	decls, rules := tool.Claimed(t), tool.Rules(t)
	if len(decls) == 0 && len(rules) == 0 && agentRule == nil {
		return
	}
	fields, err := tool.SchemaFields(t.Schema)
	if err != nil {
		bad(field, fmt.Errorf("tool %q: %w", t.Name, err))
		return
	}
	for i, d := range decls {
		if err := fields.Check(d.Field, false, "string"); err != nil {
			bad(fmt.Sprintf("%s.claims[%d]", field, i), fmt.Errorf("tool %q: claims: %w", t.Name, err))
		}
	}
	for _, r := range rules {
		checkRule(field+".approval", t.Name, fields, r, bad)
	}
	if agentRule != nil {
		checkRule("approvals."+t.Name, t.Name, fields, *agentRule, bad)
	}
}

// checkRule refuses a rule's condition on a field fields lacks, or of
// another type than it reads.
func checkRule(field, name string, fields tool.Fields, r tool.Rule, bad func(field string, err error)) {
	if p := r.PathPrefix; p != nil && p.Field != "" {
		if err := fields.Check(p.Field, true, "string"); err != nil {
			bad(field, fmt.Errorf("tool %q: approval rule pathPrefix: %w", name, err))
		}
	}
	if o := r.Over; o != nil && o.Field != "" {
		if err := fields.Check(o.Field, true, "number", "integer"); err != nil {
			bad(field, fmt.Errorf("tool %q: approval rule over: %w", name, err))
		}
	}
}
