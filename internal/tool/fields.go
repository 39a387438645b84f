package tool

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/baton-run/baton/internal/claims"
)

// nameRule is the tool name every model provider takes: 1 to 64 ASCII
// letters, digits, _ or -.
var nameRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckName refuses a tool name a model provider would refuse: every
// provider takes 1 to 64 ASCII letters, digits, _ or -.
func CheckName(name string) error {
	if nameRule.MatchString(name) {
		return nil
	}
	return fmt.Errorf("name %q: a provider takes only 1 to 64 letters, digits, _ or -", name)
}

// Approve sets t's approval policy to rules (AnyRule; every call asks
// when there are none) and keeps them, so that an agent's check can find
// a rule on a field t's schema does not have (Rules).
func Approve(t *Tool, rules ...Rule) {
	t.rules = slices.Clone(rules)
	if len(rules) == 0 {
		t.NeedsApproval = Always
		return
	}
	t.NeedsApproval = AnyRule(rules...)
}

// Rules returns the rules t's approval policy was made of by Approve, or
// nil when it was set otherwise.
func Rules(t Tool) []Rule { return t.rules }

// Claim sets t's claims to the static declarations decls (claims.Of)
// and keeps them, so that an agent's check can find a claim on a field
// t's schema does not have (Claimed).
func Claim(t *Tool, decls ...claims.Static) {
	t.claimed = slices.Clone(decls)
	t.Claims = claims.Of(decls...)
}

// Claimed returns the static declarations t's claims were made of by
// Claim, or nil when they were set otherwise.
func Claimed(t Tool) []claims.Static { return t.claimed }

// Fields are the top-level properties of a tool's input schema, by name,
// each with the JSON types it declares (none: any type), and whether the
// schema is free-form: it names no property and lets the input have any
// (an empty schema, {"type":"object"}, a Go map input). Rules and claims
// read top-level fields only, by exact name.
type Fields struct {
	Props    map[string][]string
	FreeForm bool
}

// SchemaFields reads the properties of schema: those of the root, and of
// the subschemas its allOf, anyOf and oneOf combine.
func SchemaFields(schema json.RawMessage) (Fields, error) {
	out := Fields{Props: map[string][]string{}}
	if len(strings.TrimSpace(string(schema))) == 0 {
		out.FreeForm = true
		return out, nil
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return Fields{}, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	out.add(root)
	_, patterns := root["patternProperties"]
	out.FreeForm = len(out.Props) == 0 && (root["additionalProperties"] != false || patterns)
	return out, nil
}

// add records the properties of s and of its combined subschemas.
func (f Fields) add(s map[string]any) {
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		if _, seen := f.Props[name]; seen {
			continue
		}
		f.Props[name] = types(p)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := s[k].([]any)
		for _, sub := range list {
			if m, ok := sub.(map[string]any); ok {
				f.add(m)
			}
		}
	}
}

// types are the JSON types a property schema declares, or nil for any.
func types(p any) []string {
	m, _ := p.(map[string]any)
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Check refuses a field name that is not a property of the schema, or one
// whose declared types include none of want. A property the schema does
// not name is refused even when the schema allows other properties: the
// model is told of the named ones only, so another is most likely a
// misspelling. With loose (an approval rule, which asks when it cannot
// read its field), a property that declares no type passes, and so does
// any field of a free-form schema, which cannot be checked; without it (a
// claim, whose every call fails without its field) neither does.
func (f Fields) Check(name string, loose bool, want ...string) error {
	ts, ok := f.Props[name]
	switch {
	case !ok && loose && f.FreeForm:
		return nil
	case !ok && len(f.Props) == 0:
		return fmt.Errorf("field %q is not a property of the input schema (it names none)", name)
	case !ok:
		return fmt.Errorf("field %q is not a property of the input schema (it has %s)", name, strings.Join(slices.Sorted(maps.Keys(f.Props)), ", "))
	case len(want) == 0 || (len(ts) == 0 && loose):
		return nil
	}
	for _, w := range want {
		if slices.Contains(ts, w) {
			return nil
		}
	}
	return fmt.Errorf("field %q is not a %s property of the input schema", name, strings.Join(want, " or "))
}
