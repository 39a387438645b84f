package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
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
// 2020-12 unless it says otherwise). An empty schema is allowed and
// accepts any object. References to other documents are refused: a schema
// must be self-contained.
func CheckSchema(name string, schema json.RawMessage) error {
	_, err := compile(name, schema)
	return err
}

// compile compiles one tool's schema; nil schema means none was given.
func compile(name string, schema json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("tool: %q: schema is not JSON: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const loc = "urn:baton:tool-schema"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("tool: %q: schema: %w", name, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("tool: %q: schema does not compile: %w", name, err)
	}
	return sch, nil
}

// noLoader refuses every external reference, so compiling a schema never
// reads files or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %s: tool schemas must be self-contained", url)
}

// Check validates a call's input against the named tool's schema. Input
// that is not a JSON object, or does not satisfy the schema, yields an
// *InputError.
func (r *Registry) Check(name string, input json.RawMessage) error {
	if _, ok := r.tools[name]; !ok {
		return fmt.Errorf("tool: unknown tool %q", name)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return &InputError{Tool: name, Problems: []string{"input: not valid JSON (" + err.Error() + ")"}}
	}
	if _, ok := inst.(map[string]any); !ok {
		return &InputError{Tool: name, Problems: []string{"input: must be a JSON object, got " + jsonType(inst)}}
	}
	sch := r.schemas[name]
	if sch == nil {
		return nil
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("tool: %q: validate input: %w", name, err)
	}
	p := message.NewPrinter(language.English)
	probs := describe(ve, inst, p)
	slices.Sort(probs)
	probs = slices.Compact(probs)
	if len(probs) == 0 {
		probs = []string{"input: does not match the schema"}
	}
	return &InputError{Tool: name, Problems: probs}
}

// describe turns a validation error tree into readable problems, one per
// failing leaf.
func describe(ve *jsonschema.ValidationError, inst any, p *message.Printer) []string {
	loc := ve.InstanceLocation
	switch ve.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(ve.Causes) > 0 {
			var alts []string
			for _, c := range ve.Causes {
				sub := describe(c, inst, p)
				slices.Sort(sub)
				alts = append(alts, "["+strings.Join(sub, "; ")+"]")
			}
			return []string{where(inst, loc) + ": must match one of the allowed forms: " + strings.Join(alts, " or ")}
		}
	}
	if len(ve.Causes) > 0 {
		var out []string
		for _, c := range ve.Causes {
			out = append(out, describe(c, inst, p)...)
		}
		return out
	}
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		out := make([]string, 0, len(k.Missing))
		for _, m := range k.Missing {
			out = append(out, where(inst, append(slices.Clone(loc), m))+": missing required property")
		}
		return out
	case *kind.AdditionalProperties:
		out := make([]string, 0, len(k.Properties))
		for _, m := range k.Properties {
			out = append(out, where(inst, append(slices.Clone(loc), m))+": unknown property, not allowed here")
		}
		return out
	case *kind.Type:
		return []string{where(inst, loc) + ": must be " + strings.Join(k.Want, " or ") + ", got " + k.Got}
	case *kind.FalseSchema:
		return []string{where(inst, loc) + ": not allowed"}
	case nil:
		return nil
	default:
		return []string{where(inst, loc) + ": " + k.LocalizedString(p)}
	}
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
	case json.Number, float64:
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
