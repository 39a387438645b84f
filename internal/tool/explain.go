package tool

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// explain lists, for input the validator refused, each problem it can name
// plainly, one per failing leaf: "city: missing required property". The
// validator decides whether input is valid and stops at its first failure;
// explain only describes, and names a problem only where a keyword
// certainly fails (a keyword it does not read, such as "not" or "if", it
// leaves to the validator's own message). It follows local references
// ("#/$defs/name"); draft-07 ignores a $ref's siblings.
func explain(root *jsonschema.Schema, inst any) []string {
	e := &explainer{root: root, inst: inst, draft7: root.Schema == draft07}
	return e.schema(root, inst, nil, 0)
}

type explainer struct {
	root   *jsonschema.Schema
	inst   any
	draft7 bool
}

// maxDepth bounds the references explain follows, against cycles.
const maxDepth = 64

func (e *explainer) schema(s *jsonschema.Schema, v any, loc []string, depth int) []string {
	if s == nil || depth > maxDepth {
		return nil
	}
	at := func(msg string) []string { return []string{where(e.inst, loc) + ": " + msg} }
	if s.Not != nil && isTrue(s.Not) {
		return at("not allowed")
	}
	var out []string
	if s.Ref != "" {
		out = append(out, e.schema(e.ref(s.Ref), v, loc, depth+1)...)
		if e.draft7 {
			return out
		}
	}
	if want := typesOf(s); len(want) > 0 && !typeFits(want, v) {
		return append(out, at("must be "+strings.Join(want, " or ")+", got "+jsonType(v))...)
	}
	for _, msg := range value(s, v) {
		out = append(out, at(msg)...)
	}
	switch v := v.(type) {
	case map[string]any:
		out = append(out, e.object(s, v, loc, depth)...)
	case []any:
		out = append(out, e.array(s, v, loc, depth)...)
	}
	for _, sub := range s.AllOf {
		out = append(out, e.schema(sub, v, loc, depth+1)...)
	}
	for _, alts := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf} {
		if msg := e.alternatives(alts, v, loc, depth); msg != "" {
			out = append(out, at(msg)...)
		}
	}
	return out
}

// alternatives describes an anyOf or oneOf none of whose forms fits v, or
// says nothing.
func (e *explainer) alternatives(alts []*jsonschema.Schema, v any, loc []string, depth int) string {
	if len(alts) == 0 {
		return ""
	}
	var forms []string
	for _, a := range alts {
		sub := e.schema(a, v, loc, depth+1)
		if len(sub) == 0 {
			return ""
		}
		slices.Sort(sub)
		forms = append(forms, "["+strings.Join(slices.Compact(sub), "; ")+"]")
	}
	return "must match one of the allowed forms: " + strings.Join(forms, " or ")
}

func (e *explainer) object(s *jsonschema.Schema, v map[string]any, loc []string, depth int) []string {
	var out []string
	for _, name := range s.Required {
		if _, ok := v[name]; !ok {
			out = append(out, where(e.inst, append(slices.Clone(loc), name))+": missing required property")
		}
	}
	for name, pv := range v {
		here := append(slices.Clone(loc), name)
		matched := false
		if sub, ok := s.Properties[name]; ok {
			matched = true
			out = append(out, e.schema(sub, pv, here, depth+1)...)
		}
		for pat, sub := range s.PatternProperties {
			if re, err := regexp.Compile(pat); err == nil && re.MatchString(name) {
				matched = true
				out = append(out, e.schema(sub, pv, here, depth+1)...)
			}
		}
		switch {
		case matched || s.AdditionalProperties == nil:
		case isFalse(s.AdditionalProperties):
			out = append(out, where(e.inst, here)+": unknown property, not allowed here")
		default:
			out = append(out, e.schema(s.AdditionalProperties, pv, here, depth+1)...)
		}
	}
	return out
}

func (e *explainer) array(s *jsonschema.Schema, v []any, loc []string, depth int) []string {
	prefix, rest := s.PrefixItems, s.Items
	if s.ItemsArray != nil {
		prefix, rest = s.ItemsArray, s.AdditionalItems
	}
	var out []string
	for i, item := range v {
		sub := rest
		if i < len(prefix) {
			sub = prefix[i]
		}
		here := append(slices.Clone(loc), strconv.Itoa(i))
		if sub != nil && isFalse(sub) {
			out = append(out, where(e.inst, here)+": not allowed, the array is too long")
			continue
		}
		out = append(out, e.schema(sub, item, here, depth+1)...)
	}
	return out
}

// ref finds a local reference's schema: "#", "#/$defs/a",
// "#/definitions/a/properties/b". Any other is left to the validator.
func (e *explainer) ref(ref string) *jsonschema.Schema {
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	s := e.root
	toks := strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:]
	for i := 0; s != nil && i < len(toks); i++ {
		key := func() string {
			i++
			if i >= len(toks) {
				return ""
			}
			return strings.NewReplacer("~1", "/", "~0", "~").Replace(toks[i])
		}
		switch toks[i] {
		case "$defs":
			s = s.Defs[key()]
		case "definitions":
			s = s.Definitions[key()]
		case "properties":
			s = s.Properties[key()]
		case "items":
			s = s.Items
		default:
			return nil
		}
	}
	return s
}

// value describes what keywords on a value's own content fail: enum,
// const, numeric bounds, string lengths and patterns.
func value(s *jsonschema.Schema, v any) []string {
	var out []string
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(x any) bool { return jsonschema.Equal(x, v) }) {
		vals := make([]string, len(s.Enum))
		for i, x := range s.Enum {
			vals[i] = show(x)
		}
		out = append(out, "value must be one of "+strings.Join(vals, ", "))
	}
	if s.Const != nil && !jsonschema.Equal(*s.Const, v) {
		out = append(out, "must be "+show(*s.Const))
	}
	switch v := v.(type) {
	case float64:
		out = append(out, number(s, v)...)
	case string:
		out = append(out, text(s, v)...)
	}
	return out
}

func number(s *jsonschema.Schema, n float64) []string {
	var out []string
	bound := func(b *float64, fails bool, what string) {
		if b != nil && fails {
			out = append(out, fmt.Sprintf("must be %s %s, got %s", what, fmtNum(*b), fmtNum(n)))
		}
	}
	bound(s.Minimum, s.Minimum != nil && n < *s.Minimum, "at least")
	bound(s.Maximum, s.Maximum != nil && n > *s.Maximum, "at most")
	bound(s.ExclusiveMinimum, s.ExclusiveMinimum != nil && n <= *s.ExclusiveMinimum, "more than")
	bound(s.ExclusiveMaximum, s.ExclusiveMaximum != nil && n >= *s.ExclusiveMaximum, "less than")
	if m := s.MultipleOf; m != nil && *m > 0 {
		if q := n / *m; q != math.Trunc(q) {
			out = append(out, fmt.Sprintf("must be a multiple of %s, got %s", fmtNum(*m), fmtNum(n)))
		}
	}
	return out
}

func text(s *jsonschema.Schema, str string) []string {
	var out []string
	n := utf8.RuneCountInString(str)
	if s.MinLength != nil && n < *s.MinLength {
		out = append(out, fmt.Sprintf("must be at least %d characters, got %d", *s.MinLength, n))
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		out = append(out, fmt.Sprintf("must be at most %d characters, got %d", *s.MaxLength, n))
	}
	if s.Pattern != "" {
		if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(str) {
			out = append(out, "must match the pattern "+strconv.Quote(s.Pattern))
		}
	}
	return out
}

// typesOf is a schema's "type", as a list.
func typesOf(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

// typeFits reports whether v is of one of the types; an integral number
// is an integer.
func typeFits(want []string, v any) bool {
	got := jsonType(v)
	for _, w := range want {
		if w == got || w == "integer" && got == "number" && v.(float64) == math.Trunc(v.(float64)) {
			return true
		}
	}
	return false
}

// isTrue reports whether s is the schema that accepts everything ({} or
// true); isFalse whether it is the one that accepts nothing (false, which
// the schema package reads as {"not": {}}).
func isTrue(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "true" || string(b) == "{}")
}

func isFalse(s *jsonschema.Schema) bool { return s.Not != nil && isTrue(s.Not) }

// show renders a schema's literal value for a message.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
