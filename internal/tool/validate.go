package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// InputError is a tool input that does not satisfy the tool's schema. Its
// message is written for the model, which sees it as the tool's error
// result.
type InputError struct {
	Tool string
	// Problems are one readable line each, like "city: missing required
	// property", sorted.
	Problems []string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("invalid input for tool %s: %s", e.Tool, strings.Join(e.Problems, "; "))
}

// CheckSchema reports whether schema compiles as a JSON Schema (draft
// 2020-12 unless its $schema names draft-07, -06, -04 or 2019-09). An
// empty schema is allowed and accepts any object. References to other
// documents are refused: a schema must be self-contained.
func CheckSchema(name string, schema json.RawMessage) error {
	_, err := compile(name, schema)
	return err
}

// compiled is one tool's schema, compiled on its first use (see
// Registry.Check), so that a program that never validates a call (the
// operator, the tick) never pays for it.
type compiled struct {
	raw  json.RawMessage
	once sync.Once
	sch  *jsonschema.Resolved
	err  error
}

func (c *compiled) get(name string) (*jsonschema.Resolved, error) {
	c.once.Do(func() { c.sch, c.err = compile(name, c.raw) })
	return c.sch, c.err
}

// compile compiles one tool's schema; nil schema means none was given.
func compile(name string, schema json.RawMessage) (*jsonschema.Resolved, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("tool: %q: schema is not a JSON Schema: %w", name, err)
	}
	if err := dialect(&root); err != nil {
		return nil, fmt.Errorf("tool: %q: schema: %w", name, err)
	}
	if err := checkTypes(&root); err != nil {
		return nil, fmt.Errorf("tool: %q: schema does not compile: %w", name, err)
	}
	res, err := root.Resolve(&jsonschema.ResolveOptions{BaseURI: "urn:baton:tool-schema", Loader: noLoader})
	if err != nil {
		return nil, fmt.Errorf("tool: %q: schema does not compile: %w", name, err)
	}
	return res, nil
}

// The $schema values the validator knows, and the ones validated as their
// nearest: draft-04 and -06 as draft-07, 2019-09 as 2020-12.
const (
	draft07   = "http://json-schema.org/draft-07/schema#"
	draft2020 = "https://json-schema.org/draft/2020-12/schema"
)

var dialects = map[string]string{
	"":      "",
	draft07: draft07,
	"https://json-schema.org/draft-07/schema#":      draft07,
	"http://json-schema.org/draft-07/schema":        draft07,
	"http://json-schema.org/draft-06/schema#":       draft07,
	"http://json-schema.org/draft-06/schema":        draft07,
	"http://json-schema.org/draft-04/schema#":       draft07,
	"http://json-schema.org/draft-04/schema":        draft07,
	draft2020:                                       draft2020,
	draft2020 + "#":                                 draft2020,
	"https://json-schema.org/draft/2019-09/schema":  draft2020,
	"https://json-schema.org/draft/2019-09/schema#": draft2020,
}

// dialect sets the root's $schema to the one it is validated as, or
// refuses a $schema it does not know.
func dialect(root *jsonschema.Schema) error {
	d, ok := dialects[root.Schema]
	if !ok {
		return fmt.Errorf("$schema %q is not one baton validates (draft-04, -06, -07, 2019-09 or 2020-12)", root.Schema)
	}
	root.Schema = d
	return nil
}

// jsonTypes are the type names a schema's "type" may use.
var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// checkTypes refuses a "type" that names no JSON type, anywhere in s.
func checkTypes(s *jsonschema.Schema) error {
	var bad error
	each(s, func(sub *jsonschema.Schema) {
		for _, t := range append([]string{sub.Type}, sub.Types...) {
			if t != "" && !slices.Contains(jsonTypes, t) && bad == nil {
				bad = fmt.Errorf("type %q is not a JSON type (%s)", t, strings.Join(jsonTypes, ", "))
			}
		}
	})
	return bad
}

// each calls f with s and each of its subschemas.
func each(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	f(s)
	for _, sub := range []*jsonschema.Schema{s.Items, s.AdditionalItems, s.Contains, s.UnevaluatedItems,
		s.AdditionalProperties, s.PropertyNames, s.UnevaluatedProperties, s.Not, s.If, s.Then, s.Else, s.ContentSchema} {
		each(sub, f)
	}
	for _, list := range [][]*jsonschema.Schema{s.PrefixItems, s.ItemsArray, s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range list {
			each(sub, f)
		}
	}
	for _, m := range []map[string]*jsonschema.Schema{s.Defs, s.Definitions, s.DependencySchemas, s.Properties, s.PatternProperties, s.DependentSchemas} {
		for _, sub := range m {
			each(sub, f)
		}
	}
}

// noLoader refuses every external reference, so compiling a schema never
// reads files or the network.
func noLoader(u *url.URL) (*jsonschema.Schema, error) {
	return nil, fmt.Errorf("external schema %s: tool schemas must be self-contained", u)
}

// Check validates a call's input against the named tool's schema. Input
// that is not a JSON object, or does not satisfy the schema, yields an
// *InputError. The schema is compiled on the tool's first check; a schema
// that does not compile is a plain error.
func (r *Registry) Check(name string, input json.RawMessage) error {
	if _, ok := r.tools[name]; !ok {
		return fmt.Errorf("tool: unknown tool %q", name)
	}
	inst, err := decode(input)
	if err != nil {
		return &InputError{Tool: name, Problems: []string{"input: not valid JSON (" + err.Error() + ")"}}
	}
	if _, ok := inst.(map[string]any); !ok {
		return &InputError{Tool: name, Problems: []string{"input: must be a JSON object, got " + jsonType(inst)}}
	}
	sch, err := r.schemas[name].get(name)
	if err != nil || sch == nil {
		return err
	}
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	probs := explain(sch.Schema(), inst)
	slices.Sort(probs)
	probs = slices.Compact(probs)
	if len(probs) == 0 {
		probs = []string{"input: does not match the schema (" + innermost(verr) + ")"}
	}
	return &InputError{Tool: name, Problems: probs}
}

// decode parses a call's input for validation. Numbers become float64s,
// with a number beyond float64's range as ±Inf rather than an error: JSON
// puts no limit on a number, so 1e400 is valid input that a tool may take.
func decode(input json.RawMessage) (any, error) {
	var inst any
	err := json.Unmarshal(input, &inst)
	var big *json.UnmarshalTypeError
	if !errors.As(err, &big) {
		return inst, err // nil, or the input is not JSON
	}
	// Valid JSON with a number no float64 holds: again, numbers as text.
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	inst = nil
	if err := dec.Decode(&inst); err != nil {
		return nil, err
	}
	return floats(inst), nil
}

// floats replaces the json.Numbers in v by float64s.
func floats(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(v.String(), 64) // out of range is ±Inf
		return f
	case []any:
		for i := range v {
			v[i] = floats(v[i])
		}
	case map[string]any:
		for k, x := range v {
			v[k] = floats(x)
		}
	}
	return v
}

// innermost is a validation error's message less the "validating <schema>:"
// prefixes the validator wraps it in.
func innermost(err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		msg = msg[i+2:]
	}
	return msg
}

// where renders an instance location for a person: city, items[2].name,
// ["odd key"]. The instance tells array indexes from object keys.
func where(inst any, loc []string) string {
	if len(loc) == 0 {
		return "input"
	}
	var sb strings.Builder
	cur := inst
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			sb.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
			continue
		case map[string]any:
			cur = v[tok]
		default:
			cur = nil
		}
		switch {
		case !plainKey(tok):
			sb.WriteString("[" + strconv.Quote(tok) + "]")
		case sb.Len() > 0:
			sb.WriteString("." + tok)
		default:
			sb.WriteString(tok)
		}
	}
	return sb.String()
}

// plainKey reports whether an object key reads well after a dot.
func plainKey(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && (c == '-' || '0' <= c && c <= '9'):
		default:
			return false
		}
	}
	return true
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// Truncate caps a tool's output at max bytes. Output within the cap is
// returned unchanged. Longer output becomes a JSON object marking the cut:
//
//	{"truncated":true,"originalBytes":N,"head":"<start of the output>"}
//
// head is the output's first bytes as a JSON string, cut on a UTF-8
// boundary so that its escaped form fits in max bytes; the whole object
// stays within max plus 65 bytes. Invalid UTF-8 in the head becomes
// U+FFFD.
func Truncate(out json.RawMessage, max int) (json.RawMessage, bool) {
	if len(out) <= max {
		return out, false
	}
	var b []byte
	b = append(b, `{"truncated":true,"originalBytes":`...)
	b = strconv.AppendInt(b, int64(len(out)), 10)
	b = append(b, `,"head":"`...)
	b = appendHead(b, out, max)
	b = append(b, `"}`...)
	return b, true
}

// appendHead appends to b the longest prefix of s whose JSON string escape
// takes at most budget bytes, escaped.
func appendHead(b, s []byte, budget int) []byte {
	used := 0
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		var esc []byte
		switch {
		case r == utf8.RuneError && size == 1:
			esc = []byte(`\ufffd`)
		case r == '"' || r == '\\':
			esc = []byte{'\\', byte(r)}
		case r == '\n':
			esc = []byte(`\n`)
		case r == '\r':
			esc = []byte(`\r`)
		case r == '\t':
			esc = []byte(`\t`)
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			esc = fmt.Appendf(nil, `\u%04x`, r)
		default:
			esc = s[:size]
		}
		if used+len(esc) > budget {
			break
		}
		b = append(b, esc...)
		used += len(esc)
		s = s[size:]
	}
	return b
}
